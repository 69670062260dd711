"""Headless Chromium for the console tests and the screenshots (Debian's chromium + chromium-driver)."""

from __future__ import annotations

from typing import Any

from tests.console.conftest import chromium_paths


def open_chromium(width: int = 1280, height: int = 900) -> Any:
    """A selenium WebDriver for headless Chromium, or ``None`` when it is not installed."""
    paths = chromium_paths()
    if paths is None:
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = paths
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)
