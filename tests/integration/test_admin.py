"""The admin page as an operator uses it: headless Chromium (Debian's) driven by Selenium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from mneme.memory.api import Memory
from mneme.server import create_app
from mneme.server.auth import KeyRing
from mneme.server.backend import HomeBackend
from tests.integration.server import serve_app

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
KEY = "admin-page-key-0001"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), (
        "the admin page test needs Debian's chromium: apt-get install -y chromium chromium-driver"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def rows(driver: WebDriver) -> list[WebElement]:
    return driver.find_elements(By.CSS_SELECTOR, "#rows tr.memory")


def row_with(driver: WebDriver, text: str) -> WebElement:
    return next(r for r in rows(driver) if text in r.find_element(By.CSS_SELECTOR, ".text").text)


def test_admin_page_finds_edits_and_deletes_memories(tmp_path: Path, browser: WebDriver) -> None:
    home = tmp_path / "home"
    with Memory.open(home) as mem:
        cat = mem.save("我的猫叫咪咪", user_id="ann").id
        mem.save("我住在北京", user_id="ann")
        mem.save("我不吃辣", user_id="ann")
        mem.save("<b>bob</b> 的秘密", user_id="bob")

    keys = KeyRing({KEY: None})
    with serve_app(create_app(HomeBackend(home), keys=keys)) as url:
        # the page re-renders its rows after each change: an element seen just before is stale
        wait = WebDriverWait(browser, 60, ignored_exceptions=[StaleElementReferenceException])
        browser.get(url + "/admin")
        browser.find_element(By.ID, "key").send_keys(KEY)
        browser.find_element(By.CSS_SELECTOR, "#key-form button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Connected: 2 user(s)"))

        browser.find_element(By.ID, "user").send_keys("ann")
        browser.find_element(By.CSS_SELECTOR, "#user-form button").click()
        wait.until(lambda d: len(rows(d)) == 3)
        first = rows(browser)[0]
        assert first.find_element(By.CSS_SELECTOR, ".kind").text == "semantic"
        assert "api" in first.find_element(By.CSS_SELECTOR, ".source").text
        assert first.find_element(By.CSS_SELECTOR, ".time").text  # when it was written

        # find a memory by meaning
        browser.find_element(By.ID, "q").send_keys("猫叫什么名字")
        browser.find_element(By.CSS_SELECTOR, "#search-form button[type=submit]").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "summary"), "found for"))
        top = rows(browser)[0]
        assert "我的猫叫咪咪" in top.find_element(By.CSS_SELECTOR, ".text").text
        assert top.get_attribute("data-id") == cat

        # correct it
        top.find_element(By.CSS_SELECTOR, ".edit").click()
        area = top.find_element(By.CSS_SELECTOR, ".text textarea")
        area.clear()
        area.send_keys("我的猫叫花花")
        top.find_element(By.CSS_SELECTOR, ".save").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Saved."))
        wait.until(lambda d: any("我的猫叫花花" in r.text for r in rows(d)))

        # its history shows the change
        browser.find_element(By.ID, "clear").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "summary"), "3 current memories of ann"))
        row_with(browser, "花花").find_element(By.CSS_SELECTOR, ".history").click()
        history = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "tr.history-row"))
        assert "UPDATE" in history.text and "咪咪" in history.text and "花花" in history.text

        # delete another one (the page asks first)
        row_with(browser, "北京").find_element(By.CSS_SELECTOR, ".delete").click()
        alert = wait.until(ec.alert_is_present())
        assert "我住在北京" in alert.text
        alert.accept()
        wait.until(lambda d: len(rows(d)) == 2)
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Deleted."))

        # export all
        browser.find_element(By.ID, "export").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Exported 2 memories of ann"))

        # another user's text is shown as text, never run as HTML
        user = browser.find_element(By.ID, "user")
        user.clear()
        user.send_keys("bob")
        browser.find_element(By.CSS_SELECTOR, "#user-form button").click()
        wait.until(lambda d: len(rows(d)) == 1 and "bob" in rows(d)[0].text)
        assert rows(browser)[0].find_element(By.CSS_SELECTOR, ".text").text == "<b>bob</b> 的秘密"
        assert browser.find_elements(By.CSS_SELECTOR, "#rows b") == []

    with Memory.open(home) as mem:  # the changes made in the page, through the Python API
        assert sorted(m.text for m in mem.get_all(user_id="ann")) == ["我不吃辣", "我的猫叫花花"]
        assert mem.get(cat, user_id="ann").text == "我的猫叫花花"
        assert [h.operation for h in mem.history(cat, user_id="ann")] == ["ADD", "UPDATE"]


def test_admin_page_says_when_the_key_is_wrong(tmp_path: Path, browser: WebDriver) -> None:
    with serve_app(create_app(HomeBackend(tmp_path / "home"), keys=KeyRing({KEY: None}))) as url:
        browser.get(url + "/admin")
        browser.find_element(By.ID, "key").send_keys("not-the-key")
        browser.find_element(By.CSS_SELECTOR, "#key-form button").click()
        WebDriverWait(browser, 30).until(ec.text_to_be_present_in_element((By.ID, "status"), "401"))
        assert "error" in (browser.find_element(By.ID, "status").get_attribute("class") or "")


def aspect(driver: WebDriver, key: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, f'#aspects section.aspect[data-aspect="{key}"]')


def test_the_profile_view_shows_what_is_believed_and_an_edit_there_changes_it(
    tmp_path: Path, browser: WebDriver
) -> None:
    home = tmp_path / "home"
    with Memory.open(home) as mem:
        for said in ["我对花生过敏", "我在阿里巴巴工作", "我跳槽去腾讯了", "我喜欢靠窗的座位"]:
            mem.add(said, user_id="ann")
        mem.save("昨天去了西湖", user_id="ann", kind="episodic")  # about no aspect of her
        # markup in a saved text is shown as text (the line must still read as a pet: the heads of
        # 2026-12-07 read "… 我的猫叫咪咪" after the tag at 0.28, under `ASPECT_MIN`)
        mem.save("<img src=x onerror=alert(1)> 我养了一只猫叫咪咪", user_id="ann")

    keys = KeyRing({KEY: None})
    with serve_app(create_app(HomeBackend(home), keys=keys)) as url:
        wait = WebDriverWait(browser, 60, ignored_exceptions=[StaleElementReferenceException])
        browser.get(url + "/admin")
        browser.find_element(By.ID, "key").send_keys(KEY)
        browser.find_element(By.CSS_SELECTOR, "#key-form button").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Connected"))
        browser.find_element(By.ID, "user").send_keys("ann")
        browser.find_element(By.CSS_SELECTOR, "#user-form button").click()
        wait.until(lambda d: len(rows(d)) == 5)  # the memories view first, as before
        browser.find_element(By.ID, "view-profile").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "profile-summary"), "believes about ann"))
        assert browser.find_element(By.ID, "memories").is_displayed() is False

        sections = browser.find_elements(By.CSS_SELECTOR, "#aspects section.aspect")
        order = [s.get_attribute("data-aspect") for s in sections]
        assert order[0] == "allergy" and {"employer", "seat", "pet"} <= set(order)
        allergy = aspect(browser, "allergy")
        assert "hard" in (allergy.get_attribute("class") or "")
        assert allergy.find_element(By.CSS_SELECTOR, ".badge.hard").is_displayed()
        (nuts,) = allergy.find_elements(By.CSS_SELECTOR, "li.belief")
        assert "花生" in nuts.find_element(By.CSS_SELECTOR, ".text").text
        assert nuts.find_element(By.CSS_SELECTOR, ".badge.constraint").is_displayed()
        employer = aspect(browser, "employer")
        assert not employer.find_element(By.CSS_SELECTOR, ".badge.hard").is_displayed()
        assert employer.find_element(By.CSS_SELECTOR, ".badge.single").is_displayed()
        (job,) = employer.find_elements(By.CSS_SELECTOR, "li.belief")
        assert "腾讯" in job.find_element(By.CSS_SELECTOR, ".text").text
        (before,) = job.find_elements(By.CSS_SELECTOR, "li.earlier-value")
        assert before.text.startswith("before:") and "阿里巴巴" in before.text
        assert "西湖" not in browser.find_element(By.ID, "aspects").text
        # a memory's text is shown as text, never run as HTML
        pet = aspect(browser, "pet").find_element(By.CSS_SELECTOR, "li.belief .text")
        assert pet.text == "<img src=x onerror=alert(1)> 我养了一只猫叫咪咪"
        assert browser.find_elements(By.CSS_SELECTOR, "#aspects img") == []

        # the operator corrects the employer, and forgets the seat
        job.find_element(By.CSS_SELECTOR, ".edit").click()
        area = job.find_element(By.CSS_SELECTOR, ".text textarea")
        area.clear()
        area.send_keys("在腾讯云工作")
        job.find_element(By.CSS_SELECTOR, ".save").click()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Saved."))
        wait.until(
            lambda d: (
                [
                    e.text.split(":")[0]
                    for e in aspect(d, "employer").find_elements(By.CSS_SELECTOR, "li.earlier-value")
                ]
                == ["edited from", "before"]
            )
        )
        assert (
            aspect(browser, "employer").find_element(By.CSS_SELECTOR, "li.belief .text").text
            == "在腾讯云工作"
        )
        aspect(browser, "seat").find_element(By.CSS_SELECTOR, ".delete").click()
        alert = wait.until(ec.alert_is_present())
        assert "靠窗" in alert.text
        alert.accept()
        wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "Deleted."))
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, 'section.aspect[data-aspect="seat"]'))

        # what the API returns is what the page changed
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as api:
            profile = api.get("/v1/users/ann/profile").json()
        employer_now = next(a for a in profile["aspects"] if a["aspect"] == "employer")
        assert [m["text"] for m in employer_now["memories"]] == ["在腾讯云工作"]
        assert "seat" not in [a["aspect"] for a in profile["aspects"]]
        assert profile["aspects"][0]["aspect"] == "allergy"
