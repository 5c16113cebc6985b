"""The page at ``/`` in a real headless Chromium (Debian's ``chromium`` and its
``chromedriver``, driven by selenium; nothing is downloaded): type an answer and its passages,
check, wait for the claims, compare their verdicts with the API's row for the same record, and
open a claim's evidence. Skipped where Chromium or its driver is not installed
(``scripts/setup_test_env.sh`` installs both).

``FACT_REASONER_SCREENSHOT=docs/img/serve.png`` also writes the screenshot used in the docs.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import require_extra

require_extra("serve", "embeddings")
pytest.importorskip("selenium", reason="needs selenium (the test extra)")

import httpx

from fact_reasoner.server.service import AssessmentService

from .serving import running_server, server_config, shipped_judge

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)",
)

ANSWER = (
    "Marie Curie was a Polish physicist and chemist.\n"
    "Marie Curie was born in Paris in 1867.\n"
    "Marie Curie won the Nobel Prize in Physics in 1903.\n"
    "Marie Curie won the Nobel Prize in Chemistry in 1911.\n"
    "Marie Curie discovered penicillin."
)
PASSAGES = [
    "Marie Curie was a Polish and naturalised-French physicist and chemist who conducted pioneering "
    "research on radioactivity. She was born in Warsaw, in what was then the Kingdom of Poland, in 1867.",
    "In 1903 Marie Curie shared the Nobel Prize in Physics with Pierre Curie and Henri Becquerel. "
    "In 1911 she won the Nobel Prize in Chemistry.",
    "Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming.",
]


@pytest.fixture()
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for a driver online
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1100,1500",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_checks_an_answer_and_shows_the_evidence(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import Select, WebDriverWait

    service = AssessmentService(server_config(), nli_backend=shipped_judge())
    with running_server(service) as (url, _):
        browser.get(url + "/")
        wait = WebDriverWait(browser, 120)
        wait.until(lambda d: "judge cross-encoder" in d.find_element(By.ID, "server-info").text)
        browser.find_element(By.ID, "question").send_keys("Tell me a bio of Marie Curie.")
        browser.find_element(By.ID, "answer").send_keys(ANSWER)
        browser.find_element(By.ID, "passages").send_keys("\n\n".join(PASSAGES))
        Select(browser.find_element(By.ID, "claims")).select_by_value("lines")
        browser.find_element(By.ID, "check").click()
        wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#atoms .atom")))
        shown = [
            (b.find_element(By.CLASS_NAME, "text").text, b.find_element(By.CLASS_NAME, "verdict").text)
            for b in browser.find_elements(By.CSS_SELECTOR, "#atoms .atom")
        ]

        # the same record through the API: the page shows the row's verdicts
        record = {
            "input": "Tell me a bio of Marie Curie.",
            "output": ANSWER,
            "atoms": [{"id": f"a{i}", "text": line} for i, line in enumerate(ANSWER.split("\n"))],
            "contexts": [{"id": f"c{i}", "text": text} for i, text in enumerate(PASSAGES)],
        }
        row = httpx.post(url + "/v1/assess", json=record, timeout=120).json()
        assert shown == [(atom["text"], atom["prediction"]) for atom in row["atoms"]]
        verdicts = dict(shown)
        # two clear cases (the shipped judge's verdicts; a judge that misses these is broken)
        assert verdicts["Marie Curie was born in Paris in 1867."] == "NS"
        assert verdicts["Marie Curie won the Nobel Prize in Physics in 1903."] == "S"
        precision = browser.find_element(By.CSS_SELECTOR, '.score[data-name="factual precision"] b').text
        assert precision == f"{row['factuality_score']:.3f}"

        # a claim's evidence: its passages with relation and probability, the sentence highlighted
        born = next(b for b in browser.find_elements(By.CSS_SELECTOR, "#atoms .atom") if "Paris" in b.text)
        born.click()
        wait.until(seen.visibility_of_element_located((By.ID, "evidence")))
        atom = next(a for a in row["atoms"] if "Paris" in a["text"])
        passages = browser.find_elements(By.CSS_SELECTOR, "#passages-list .passage")
        assert len(passages) == len(PASSAGES)
        for link in atom["evidence"]:
            item = browser.find_element(By.CSS_SELECTOR, f'.passage[data-context="{link["context"]}"]')
            assert f"p = {link['probability']:.3f}" in item.text
            assert link["relation"] in item.get_attribute("class")
        # "born in Paris" against "born in Warsaw": that sentence is marked as contradicting
        assert any(e["context"] == "c0" and e["relation"] == "contradiction" for e in atom["evidence"]), atom
        marked = browser.find_elements(By.CSS_SELECTOR, '.passage[data-context="c0"] mark.contradiction')
        assert any("Warsaw" in mark.text and "1867" in mark.text for mark in marked)
        # what the judge said and the graph did not use: apart, muted, with why — never "neutral"
        for left in atom.get("unused_evidence") or []:
            item = browser.find_element(By.CSS_SELECTOR, f'.passage[data-context="{left["context"]}"]')
            assert "unused" in item.get_attribute("class") and left["reason"] in item.text
            assert item.text.startswith("not used: the judge says it") and "neutral" not in item.text
        assert atom.get("unused_evidence"), atom  # Fleming's passage "contradicts" it: another attribute
        quiet = [i for i in passages if "none" in i.get_attribute("class")]
        assert all(i.text.startswith("the judge: neutral") for i in quiet)

        picture = tmp_path / "serve.png"
        browser.save_screenshot(str(picture))
        assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        target = os.environ.get("FACT_REASONER_SCREENSHOT")
        if target:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(picture, target)
    service.close()


def test_an_error_is_shown_and_no_score(browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    service = AssessmentService(server_config(), nli_backend=shipped_judge())
    with running_server(service) as (url, _):
        browser.get(url + "/")
        wait = WebDriverWait(browser, 60)
        wait.until(lambda d: "judge" in d.find_element(By.ID, "server-info").text)
        browser.find_element(By.ID, "answer").send_keys("A claim. " * 250)  # 250 claims: over the limit
        browser.find_element(By.ID, "passages").send_keys("A passage.")
        browser.find_element(By.ID, "check").click()
        wait.until(lambda d: "Not scored" in d.find_element(By.ID, "status").text)
        status = browser.find_element(By.ID, "status").text
        assert "422" in status and "max_atoms" in status
        assert not browser.find_element(By.ID, "result").is_displayed()
    service.close()


def test_the_page_shows_where_a_panels_judges_disagree(browser, tmp_path):
    """``serve --nli cross-encoder@entailment,specialist@contradiction``: a claim's passages show
    each judge's verdict, a disagreement marked; ``FACT_REASONER_SCREENSHOT_PANEL=PATH`` writes
    the docs' picture."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import Select, WebDriverWait

    service = AssessmentService(server_config(nli="cross-encoder@entailment,specialist@contradiction"))
    answer = "The Great Wall of China is visible to the naked eye from the Moon.\nMarie Curie was born in Warsaw."
    passages = [
        "The Great Wall of China is not visible to the naked eye from the Moon.",
        "Marie Curie was born in Warsaw in 1867.",
    ]
    try:
        with running_server(service) as (url, _):
            browser.get(url + "/")
            wait = WebDriverWait(browser, 120)
            wait.until(lambda d: "panel" in d.find_element(By.ID, "server-info").text)
            browser.find_element(By.ID, "answer").send_keys(answer)
            browser.find_element(By.ID, "passages").send_keys("\n\n".join(passages))
            Select(browser.find_element(By.ID, "claims")).select_by_value("lines")
            browser.find_element(By.ID, "check").click()
            wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#atoms .atom")))
            record = {
                "output": answer,
                "atoms": [{"id": f"a{i}", "text": line} for i, line in enumerate(answer.split("\n"))],
                "contexts": [{"id": f"c{i}", "text": text} for i, text in enumerate(passages)],
            }
            row = httpx.post(url + "/v1/assess", json=record, timeout=120).json()
            wall = next(b for b in browser.find_elements(By.CSS_SELECTOR, "#atoms .atom") if "Wall" in b.text)
            wall.click()
            wait.until(seen.visibility_of_element_located((By.ID, "evidence")))
            atom = row["atoms"][0]
            for link in atom["evidence"] + (atom.get("unused_evidence") or []):
                item = browser.find_element(By.CSS_SELECTOR, f'.passage[data-context="{link["context"]}"]')
                judges = item.find_element(By.CSS_SELECTOR, ".judges")
                assert ("disagree" in judges.get_attribute("class")) is (link["agreed"] is False)
                for name, verdict in link["judges"].items():
                    assert f"{name}: " in judges.text and f"{verdict['probability']:.2f}" in judges.text
            picture = tmp_path / "serve_panel.png"
            browser.save_screenshot(str(picture))
            target = os.environ.get("FACT_REASONER_SCREENSHOT_PANEL")
            if target:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(picture, target)
    finally:
        service.close()
