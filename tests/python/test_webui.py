"""The chat page (tools/server/webui/index.html) in a real headless browser:
Debian's chromium and chromium-driver driven by selenium (scripts/setup.sh
installs them; the browser tests skip without them). GET / without
text/html, and --no-webui, keep Ollama's plain answer (plain urllib)."""
import json
import re
import shutil
import struct
import time
import urllib.request
import zlib

import pytest

WIDTH, HEIGHT = 1100, 800


def get_root(server, accept=None):
    req = urllib.request.Request(server.url + "/", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as res:
        return res.status, res.headers["Content-Type"], res.read().decode()


def test_root_by_accept_header(start_server):
    server = start_server("--api-key", "sekrit")
    assert get_root(server) == (200, "text/plain; charset=utf-8", "Ollama is running")
    assert get_root(server, "application/json")[2] == "Ollama is running"
    # a browser's Accept; the page needs no key (it asks for one)
    status, ctype, page = get_root(server, "text/html,application/xhtml+xml,*/*;q=0.8")
    assert (status, ctype) == (200, "text/html; charset=utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<title>hearth</title>" in page
    assert "/v1/chat/completions" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|@import|url\(""", page)  # nothing loaded from elsewhere


def test_no_webui(start_server, run_hearth):
    assert "--no-webui" in run_hearth("serve", "--help").stdout.decode()
    server = start_server("--no-webui")
    assert get_root(server, "text/html") == (200, "text/plain; charset=utf-8", "Ollama is running")


@pytest.fixture(scope="module")
def driver():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (tests/requirements.txt)")
    browser, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not browser or not chromedriver:
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup.sh)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={WIDTH},{HEIGHT}", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    d = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=chromedriver))
    d.set_window_size(WIDTH, HEIGHT)
    yield d
    d.quit()


@pytest.fixture(scope="module")
def server(start_server):
    return start_server()


def by_id(driver, id_):
    from selenium.webdriver.common.by import By
    return driver.find_element(By.ID, id_)


def wait_for(what, timeout=60):
    deadline = time.monotonic() + timeout
    while not (value := what()):
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)
    return value


def open_page(driver, server, settings=None):
    """Loads the page with fresh storage and the given settings."""
    driver.get(server.url + "/")
    driver.execute_script("localStorage.clear(); localStorage.setItem('hearth.settings', arguments[0]);",
                          json.dumps(settings or {}))
    driver.get(server.url + "/")
    wait_for(lambda: by_id(driver, "model-name").text or by_id(driver, "error").text)


def assistant_text(driver):
    return driver.execute_script("const m = document.querySelectorAll('.msg.assistant');"
                                 "return m.length ? m[m.length - 1].textContent : '';")


def send(driver, text):
    by_id(driver, "input").send_keys(text)
    by_id(driver, "send").click()


def lengths_while_streaming(driver):
    """The reply's lengths seen until the Stop button turns back to Send."""
    seen = []
    while by_id(driver, "send").text == "Stop" or not seen:
        n = len(assistant_text(driver))
        if not seen or n != seen[-1]:
            seen.append(n)
        time.sleep(0.01)
    return seen


def test_settings_chat_stream_and_reload(driver, server):
    open_page(driver, server)
    assert by_id(driver, "model-name").text == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert not by_id(driver, "model-select").is_displayed()  # one model: its name, no picker
    # the settings panel, as a person fills it
    by_id(driver, "open-settings").click()
    for field, value in [("system", "You are terse."), ("temperature", "0"), ("top_p", "0.9"),
                         ("max_tokens", "48"), ("api_key", "k1")]:
        by_id(driver, "set-" + field).clear()
        by_id(driver, "set-" + field).send_keys(value)
    by_id(driver, "settings").find_element("css selector", "button[type=submit]").click()
    # record what the page sends
    driver.execute_script("""window.sent = [];
        const real = window.fetch;
        window.fetch = (url, init) => { window.sent.push([url, init || {}]); return real(url, init); };""")
    send(driver, "Tell me about the sea.")
    seen = lengths_while_streaming(driver)
    assert seen[-1] > 0 and len(set(seen)) >= 3, f"the text did not grow token by token: {seen}"
    assert seen == sorted(seen)
    url, init = driver.execute_script("return window.sent.map(([u, i]) => [u, i]).pop();")
    body = json.loads(init["body"])
    assert url == "/v1/chat/completions" and init["headers"]["Authorization"] == "Bearer k1"
    assert body == {"messages": [{"role": "system", "content": "You are terse."},
                                 {"role": "user", "content": "Tell me about the sea."}],
                    "stream": True, "model": "SmolLM2-135M-Instruct.Q4_1.gguf",
                    "temperature": 0, "top_p": 0.9, "max_tokens": 48}
    reply = assistant_text(driver)
    assert by_id(driver, "error").text == ""

    # reload: the conversation and settings are kept
    driver.refresh()
    wait_for(lambda: by_id(driver, "model-name").text)
    msgs = driver.execute_script("return [...document.querySelectorAll('.msg')].map(m => m.textContent);")
    assert msgs == ["Tell me about the sea.", reply]
    assert driver.execute_script("return JSON.parse(localStorage.getItem('hearth.settings')).max_tokens") == "48"

    # new chat, switch back, delete
    by_id(driver, "new-chat").click()
    chats = driver.find_elements("css selector", "#chats li")
    assert [c.text.replace("\u00d7", "").strip() for c in chats] == ["New chat", "Tell me about the sea."]
    assert driver.find_elements("css selector", ".msg") == []
    chats[1].click()
    assert len(driver.find_elements("css selector", ".msg")) == 2
    driver.find_elements("css selector", "#chats li button.delete")[1].click()
    assert len(driver.find_elements("css selector", "#chats li")) == 1
    driver.refresh()
    assert len(driver.find_elements("css selector", "#chats li")) == 1


def test_model_picker(driver, server):
    # a server listing two models (the page's fetch answered here): a picker, and the choice is sent
    open_page(driver, server, {"max_tokens": "4"})
    driver.execute_script("""window.sent = [];
        const real = window.fetch;
        window.fetch = (url, init) => {
          window.sent.push(JSON.parse((init && init.body) || "null"));
          if (url !== "/v1/models") return real(url, init);
          const data = [{id: "SmolLM2-135M-Instruct.Q4_1.gguf"}, {id: "other"}];
          return Promise.resolve(new Response(JSON.stringify({object: "list", data})));
        };
        return loadModels();""")
    picker = by_id(driver, "model-select")
    assert picker.is_displayed() and by_id(driver, "model-name").text == ""
    assert [o.text for o in picker.find_elements("css selector", "option")] == ["SmolLM2-135M-Instruct.Q4_1.gguf",
                                                                                  "other"]
    picker.find_element("css selector", "option[value=other]").click()
    send(driver, "Hi")
    wait_for(lambda: by_id(driver, "send").text == "Send")
    assert driver.execute_script("return window.sent.pop().model") == "other"  # any name serves
    assert driver.execute_script("return JSON.parse(localStorage.getItem('hearth.settings')).model") == "other"


def slots_busy(server):
    with urllib.request.urlopen(server.url + "/slots", timeout=10) as res:
        return [s for s in json.load(res) if s["state"] != "idle"]


def test_stop(driver, server):
    open_page(driver, server, {"max_tokens": "3000", "temperature": "0"})
    send(driver, "Write a very long story about a dragon who learns to cook.")  # 3000 tokens here
    wait_for(lambda: len(assistant_text(driver)) > 40 or by_id(driver, "send").text == "Send")
    assert by_id(driver, "send").text == "Stop", "the answer ended before it could be stopped"
    by_id(driver, "send").click()  # now the Stop button
    wait_for(lambda: by_id(driver, "send").text == "Send", timeout=5)
    stopped = assistant_text(driver)
    assert stopped.endswith("(stopped)")
    time.sleep(1)
    assert assistant_text(driver) == stopped
    wait_for(lambda: not slots_busy(server), timeout=10)  # the server noticed and freed the slot


def test_markdown_is_safe(driver, server):
    open_page(driver, server)
    render = """const div = document.createElement('div');
        div.id = 'probe';
        div.innerHTML = renderMarkdown(arguments[0]);
        document.body.append(div);
        const out = {html: div.innerHTML, text: div.textContent,
                     bad: div.querySelectorAll('img, script, iframe, [onerror], [onclick]').length,
                     links: [...div.querySelectorAll('a')].map(a => a.getAttribute('href'))};
        div.remove();
        return out;"""
    for text in ['<img src=x onerror=alert(1)>', "```\n<script>alert(1)</script>\n```",
                 '`<img src=x onerror=alert(1)>`', '**<script>alert(1)</script>**',
                 '[x](javascript:alert(1)) [y](https://e.com/"onmouseover="alert(1))']:
        out = driver.execute_script(render, text)
        assert out["bad"] == 0, out
        assert all(link.startswith("https://") for link in out["links"]), out
    out = driver.execute_script(render, "```\n<script>alert(1)</script>\n```")
    assert out["html"] == "<pre><code>&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>"
    assert driver.execute_script(render, "<img src=x onerror=alert(1)>")["text"] == "<img src=x onerror=alert(1)>"
    out = driver.execute_script(render, "# Title\n\nSome **bold**, *it*, `x<1`, [site](https://example.com).\n\n"
                                        "- one\n- two\n\n1. first\n\n2. second\n\n```py\nprint('hi')\n```")
    assert out["html"] == (
        '<h1>Title</h1>\n<p>Some <strong>bold</strong>, <em>it</em>, <code>x&lt;1</code>, '
        '<a href="https://example.com" target="_blank" rel="noopener noreferrer">site</a>.</p>\n'
        '<ul><li>one</li><li>two</li></ul>\n<ol><li>first</li></ol>\n<ol start="2"><li>second</li></ol>\n'
        '<pre><code class="language-py">print(\'hi\')</code></pre>')


def test_wrong_key(driver, start_server):
    server = start_server("--api-key", "sekrit")
    open_page(driver, server)
    assert by_id(driver, "error").text == "The API key is wrong or missing: set it in settings."
    send(driver, "Hi")
    wait_for(lambda: by_id(driver, "send").text == "Send")
    assert by_id(driver, "error").text == "The API key is wrong or missing: set it in settings."
    open_page(driver, server, {"api_key": "sekrit", "max_tokens": "8"})
    assert by_id(driver, "error").text == ""
    send(driver, "Hi")
    wait_for(lambda: by_id(driver, "send").text == "Send")
    assert assistant_text(driver) and by_id(driver, "error").text == ""


def test_busy_and_other_errors(driver, server):
    # the page's words for a 503 and a 400 (the answers stubbed: a real 503 needs every slot and queue place taken)
    open_page(driver, server)
    for status, shown in [(503, "The server is busy, retry shortly."),
                          (400, "Error 400: 'messages' is bad")]:
        driver.execute_script("""window.fetch = () => Promise.resolve(new Response(
            JSON.stringify({error: {message: "'messages' is bad"}}), {status: arguments[0]}));""", status)
        send(driver, "Hi")
        wait_for(lambda: by_id(driver, "send").text == "Send")
        assert by_id(driver, "error").text == shown


def png_size_and_colours(png):
    """(width, height) and the number of distinct pixels of an 8-bit RGB(A) PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", png[pos + 8:pos + 21])
        elif kind == b"IDAT":
            idat += png[pos + 8:pos + 8 + n]
        pos += 12 + n
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw, stride, prev, pixels = zlib.decompress(idat), width * bpp, bytearray(width * bpp), set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the row's filter (PNG spec 9.2)
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pred = [0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c)
                    else c][kind]
            line[i] = (line[i] + pred) & 0xFF
        pixels.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp * 7))
        prev = line
    return (width, height), len(pixels)


@pytest.mark.parametrize("width, height", [(WIDTH, HEIGHT), (390, 844)])  # a desktop and a phone
def test_screenshot(driver, server, tmp_path, width, height):
    driver.set_window_size(width, height)
    try:
        open_page(driver, server, {"max_tokens": "80", "temperature": "0"})
        send(driver, "Write a Python function that adds two numbers.")
        wait_for(lambda: by_id(driver, "send").text == "Send")
        png = driver.get_screenshot_as_png()
        (tmp_path / f"webui-{width}x{height}.png").write_bytes(png)
        size, colours = png_size_and_colours(png)
        assert size == tuple(driver.execute_script("return [innerWidth, innerHeight]"))
        assert colours > 10, f"the screenshot has {colours} colours"
        assert driver.execute_script("return document.documentElement.scrollWidth") <= width  # no sideways scroll
    finally:
        driver.set_window_size(WIDTH, HEIGHT)
