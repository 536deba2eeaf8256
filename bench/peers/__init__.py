"""The peers offboardd is compared with, each a standalone script run as its own process."""
