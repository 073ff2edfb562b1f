"""Browser tests: the app as a real server process, driven by Playwright through Debian's chromium."""
