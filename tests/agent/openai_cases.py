#!/usr/bin/env python3
"""openai_cases.py - the cases of the openai: client's test suite (tests/suites/openai.sh).

Starts tests/agent/fake_openai.py's server in this process, runs the driver (openai_test, built from
tests/agent/openai_test.c and src/agent/openai.c) once per case, and checks its JSON output against
what the server recorded: the text reassembled exactly, the tokens of the usage chunk, the number
of requests, the waits between them, time limits, error messages, and that every request body was
valid JSON carrying the messages exactly (invalid UTF-8 as U+FFFD).

Usage: openai_cases.py DRIVER [SEED...]   (default: three seeds drawn from the clock, printed)
       NOCURL_DRIVER=path also checks a driver built without libcurl.
Prints "ok NAME" / "FAIL NAME: why" per case and last "N passed, M failed".
"""
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_openai import FakeServer, gen_text  # noqa: E402

BACKOFF = 0.2  # SOLFORGE_OPENAI_BACKOFF_S for the cases: retry k waits 0.1*2^(k-1)..0.2*2^(k-1) s
SLACK = 4.0    # seconds of scheduling slack on a loaded 2-core machine, for upper bounds only

lock = threading.Lock()
results = []


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def messages(rng, tmp, tag):
    """Random messages (roles, awkward text, sometimes invalid UTF-8) as files; returns
    [(role, path, expected text as the server must see it)]."""
    out = []
    for i in range(rng.randint(1, 5)):
        role = rng.choice(["system", "user", "assistant"]) if i else "system"
        raw = gen_text(rng, rng.randint(0, 400)).replace("\x00", "").encode()
        if rng.random() < 0.5:  # invalid UTF-8: stray bytes, truncated and overlong sequences, surrogates
            for bad in rng.sample([b"\xff", b"\x80", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80",
                                   b"\xf4\x90\x80\x80", b"\xf0\x9f\x98"], 3):
                k = rng.randint(0, len(raw))
                raw = raw[:k] + bad + raw[k:]
        path = os.path.join(tmp, "%s-%d" % (tag, i))
        with open(path, "wb") as f:
            f.write(raw)
        out.append((role, path, raw.decode("utf-8", "replace")))
    return out


class Ctx:
    def __init__(self, srv, driver, tmp):
        self.srv, self.driver, self.tmp = srv, driver, tmp

    def run(self, model, msgs=None, key=None, timeout=20, retries=3, extra=(), env=None, base=None,
            driver=None):
        """Runs the driver; returns (parsed JSON lines, wall seconds)."""
        cmd = [driver or self.driver]
        if base is not False:
            cmd += ["--base", base or self.srv.base_url]
        cmd += ["--model", model, "--timeout", str(timeout), "--retries", str(retries)]
        if key:
            cmd += ["--key", key]
        for role, path, _ in msgs or []:
            cmd += ["--msg", role, path]
        cmd += list(extra)
        e = dict(os.environ, SOLFORGE_OPENAI_BACKOFF_S=str(BACKOFF))
        e.update(env or {})
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, timeout=120)
        wall = time.monotonic() - t0
        if p.stderr.strip():
            raise Fail("driver wrote to stderr: %s" % p.stderr.decode(errors="replace")[-2000:])
        try:
            lines = [json.loads(l) for l in p.stdout.decode("utf-8").split("\n") if l]
        except ValueError as ex:
            raise Fail("driver output is not JSON lines (%s): %r" % (ex, p.stdout[:300]))
        for r in lines:
            if "rc" in r and "attempts" in r and (r["rc"] == 0) != (p.returncode == 0) and len(lines) == 1:
                raise Fail("driver exit %d but rc %d" % (p.returncode, r["rc"]))
        return lines, wall

    def good(self, r, model, msgs, key=None, attempts=1, usage=True):
        """Checks a successful reply against the server's records of model."""
        recs = self.srv.records_of(model)
        check(r["rc"] == 0, "call failed: %s" % r["err"])
        check(r["err"] == "", "err set on success: %r" % r["err"])
        check(r["attempts"] == attempts, "attempts %d, expected %d" % (r["attempts"], attempts))
        check(len(recs) == attempts, "server saw %d requests, expected %d" % (len(recs), attempts))
        last = recs[-1]
        check(r["http_status"] == 200, "http_status %d" % r["http_status"])
        check(r["content"] == last["content"], "content differs: got %d chars %r..., sent %d chars %r..." % (
            len(r["content"] or ""), (r["content"] or "")[:60], len(last["content"]), last["content"][:60]))
        if usage:
            check([r["prompt_tokens"], r["completion_tokens"]] == last["usage"],
                  "tokens %s, sent %s" % ([r["prompt_tokens"], r["completion_tokens"]], last["usage"]))
        else:
            check(r["prompt_tokens"] == -1 and r["completion_tokens"] == -1, "tokens known without usage")
        self.requests_ok(recs, msgs, key)

    def requests_ok(self, recs, msgs, key=None):
        for rec in recs:
            check(not rec["problems"], "request problems: %s" % rec["problems"])
            if msgs is not None:
                want = [{"role": m[0], "content": m[2]} for m in msgs]
                check(rec["messages"] == want, "messages differ: got %r, want %r" % (
                    str(rec["messages"])[:200], str(want)[:200]))
            check(rec["auth"] == ("Bearer " + key if key else None), "authorization %r" % rec["auth"])


def case(name):
    def deco(fn):
        fn.case_name = name
        return fn
    return deco


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cases_for_seed(seed):
    """The list of (name, function(ctx)) for one seed."""
    out = []

    def add(name, fn):
        out.append(("%s[seed=%d]" % (name, seed), fn))

    def stream_ok(action):
        def fn(c):
            rng = random.Random("%d|%s" % (seed, action))
            msgs = messages(rng, c.tmp, "s%d-%s" % (seed, action))
            key = "sk-test-%d" % rng.randint(0, 10**6) if rng.random() < 0.7 else None
            model = "%s/%s/seed=%d" % (action, action, seed)
            extra = []
            temp = mt = None
            if rng.random() < 0.5:
                temp = rng.choice([0, 0.25, 1, 1.7])
                extra += ["--temperature", str(temp)]
            if rng.random() < 0.5:
                mt = rng.randint(1, 100000)
                extra += ["--max-tokens", str(mt)]
            (r,), _ = c.run(model, msgs, key=key, extra=extra)
            c.good(r, model, msgs, key, usage=action != "nousage")
            rec = c.srv.records_of(model)[-1]
            check(rec["temperature"] == temp, "temperature %r, want %r" % (rec["temperature"], temp))
            check(rec["max_tokens"] == mt, "max_tokens %r, want %r" % (rec["max_tokens"], mt))
        return fn

    for a in ("ok", "bytes", "big", "nousage", "json"):
        add("stream-" + a, stream_ok(a))

    def retried(actions, attempts, min_wait):
        def fn(c):
            rng = random.Random("%d|%s" % (seed, actions))
            msgs = messages(rng, c.tmp, "r%d-%s" % (seed, actions))
            model = "retry/%s/seed=%d" % (actions, seed)
            (r,), wall = c.run(model, msgs, retries=attempts - 1 + rng.randint(0, 2))
            c.good(r, model, msgs, attempts=attempts)
            check(r["elapsed"] >= min_wait, "retried after %.3f s, at least %.3f s expected" % (r["elapsed"], min_wait))
            check(r["elapsed"] <= min_wait * 2 + 1.5 * attempts + SLACK, "too slow: %.3f s" % r["elapsed"])
        return fn

    b = BACKOFF / 2  # the shortest first backoff
    add("retry-500-503", retried("500,503,ok", 3, b + 2 * b))
    add("retry-502", retried("502,ok", 2, b))
    add("retry-after-1s", retried("429:1,ok", 2, 1.0))
    add("retry-after-ms", retried("429ms:700,429ms:300,ok", 3, 1.0))
    add("retry-after-date", retried("429date:2,ok", 2, 1.0))  # HTTP dates have whole seconds
    add("retry-broken-stream", retried("break,ok", 2, b))
    add("retry-broken-chunk", retried("breakchunk,ok", 2, b))
    add("retry-error-event", retried("errchunk,ok", 2, b))
    add("retry-garbage-chunk", retried("garbage,ok", 2, b))

    def fails(tag, action, retries, want_attempts, want_status, want_in, max_s=None, min_s=0.0, env=None, timeout=20):
        def fn(c):
            model = "%s/%s/seed=%d" % (tag, action, seed)
            rng = random.Random("%d|%s" % (seed, tag))
            msgs = messages(rng, c.tmp, "f%d-%s" % (seed, tag))
            (r,), wall = c.run(model, msgs, retries=retries, timeout=timeout, env=env)
            recs = c.srv.records_of(model)
            check(r["rc"] == -1, "call succeeded")
            check(r["content"] is None, "content on failure")
            check(r["prompt_tokens"] == -1 and r["completion_tokens"] == -1, "tokens on failure")
            check(r["attempts"] == want_attempts, "attempts %d, expected %d" % (r["attempts"], want_attempts))
            check(r["http_status"] == want_status, "http_status %d, expected %d" % (r["http_status"], want_status))
            for w in want_in:
                w = w.replace("{server}", recs[-1]["content"] or "") if recs else w
                check(w in r["err"], "err %r lacks %r" % (r["err"], w))
            check(r["err"] == r["err"].lower() or "{server}" in "".join(want_in), "err not lowercase: %r" % r["err"])
            check(r["elapsed"] >= min_s, "returned after %.3f s, before %.3f s" % (r["elapsed"], min_s))
            if max_s is not None:
                check(r["elapsed"] <= max_s, "returned after %.3f s, limit %.3f s" % (r["elapsed"], max_s))
            c.requests_ok(recs, msgs)
        return fn

    add("fail-400-message", fails("fail-400-message", "400", 3, 1, 400, ["http 400: {server}"], max_s=SLACK))
    add("fail-401-message", fails("fail-401-message", "401", 3, 1, 401, ["http 401: {server}"], max_s=SLACK))
    add("fail-404-message", fails("fail-404-message", "404", 2, 1, 404, ["http 404: {server}"], max_s=SLACK))
    add("fail-500-gives-up", fails("fail-500-gives-up", "500", 2, 3, 500, ["http 500: {server}", "gave up after 3 attempts"],
                                   min_s=b + 2 * b))
    add("fail-503-plain-body", fails("fail-503-plain-body", "503", 0, 1, 503, ["http 503: {server}"], max_s=SLACK))
    add("fail-broken-stream", fails("fail-broken-stream", "break", 0, 1, 200, ["broke off before its end marker"], max_s=SLACK))
    add("fail-error-event", fails("fail-error-event", "errchunk", 1, 2, 200, ["overloaded mid-stream"]))
    add("fail-retry-after-too-long", fails("fail-retry-after-too-long", "429:100000", 3, 1, 429, ["http 429", "not waiting"], max_s=SLACK))
    add("fail-timeout", fails("fail-timeout", "stall:30", 0, 1, 200, ["timed out"], min_s=1.4, max_s=1.5 + SLACK, timeout=1.5))
    add("fail-timeout-before-headers", fails("fail-timeout-before-headers", "stallhead:30", 0, 1, 0, ["timed out"], min_s=1.4,
                                            max_s=1.5 + SLACK, timeout=1.5))
    add("fail-timeout-retried", fails("fail-timeout-retried", "stall:30", 1, 2, 200, ["timed out", "gave up after 2"], min_s=2.8 + b,
                                      max_s=3 + 2 * BACKOFF + SLACK, timeout=1.4))
    add("fail-idle-limit", fails("fail-idle-limit", "stall:30", 0, 1, 200, ["nothing received", "idle limit 1 s"], min_s=1.0,
                                 max_s=2 + SLACK,
                                 env={"SOLFORGE_OPENAI_IDLE_S": "1"}, timeout=25))

    def timeout_then_ok(c):
        model = "tmo/stallhead:30,ok/seed=%d" % seed
        msgs = [("user", "/dev/null", "")]
        (r,), _ = c.run(model, msgs, retries=1, timeout=1.5)
        c.good(r, model, msgs, attempts=2)
        check(r["elapsed"] >= 1.4, "timed out after %.3f s" % r["elapsed"])
    add("retry-after-timeout", timeout_then_ok)
    add("fail-idle-before-headers", fails("fail-idle-before-headers", "stallhead:30", 1, 2, 0, ["nothing received", "gave up after 2"],
                                          min_s=1.6 + b, max_s=2 * 1.6 + 2 + SLACK,
                                          env={"SOLFORGE_OPENAI_IDLE_S": "0.8"}, timeout=25))

    def refused(c):
        port = free_port()
        (r,), _ = c.run("refused/ok/seed=%d" % seed, [("user", "/dev/null", "")], retries=2,
                        base="http://127.0.0.1:%d/v1" % port)
        check(r["rc"] == -1 and r["attempts"] == 3, "rc %d attempts %d" % (r["rc"], r["attempts"]))
        check(r["http_status"] == 0, "http_status %d" % r["http_status"])
        check("request failed" in r["err"] and "gave up after 3" in r["err"], "err %r" % r["err"])
        check(r["elapsed"] >= b + 2 * b, "backoff too short: %.3f s" % r["elapsed"])
    add("fail-connection-refused", refused)

    def threads(c):
        rng = random.Random("%d|threads" % seed)
        msgs = messages(rng, c.tmp, "t%d" % seed)
        n = rng.randint(2, 6)
        model = "thr/%s/seed=%d" % (rng.choice(["ok", "500,ok", "break,ok"]), seed)
        lines, _ = c.run(model, msgs, retries=2, extra=["--threads", str(n)])
        check(len(lines) == n, "%d results for %d threads" % (len(lines), n))
        for r in lines:
            c.good(r, r["model"], msgs, attempts=len(c.srv.records_of(r["model"])))
            check(r["attempts"] == (1 if model.split("/")[1] == "ok" else 2), "attempts %d" % r["attempts"])
    add("threads", threads)

    def trailing_slash(c):
        model = "slash/ok/seed=%d" % seed
        (r,), _ = c.run(model, [("user", "/dev/null", "")], base=c.srv.base_url + "//", key="k")
        c.good(r, model, [("user", "/dev/null", "")], key="k")
    add("base-url-trailing-slash", trailing_slash)

    def from_env(c):
        model = "env/ok/seed=%d" % seed
        key = "sk-env-%d" % seed
        env = {"OPENAI_BASE_URL": c.srv.base_url, "OPENAI_API_KEY": key, "SOLFORGE_OPENAI_TEMPERATURE": "0.5",
               "SOLFORGE_OPENAI_MAX_TOKENS": str(100 + seed)}
        msgs = [("user", "/dev/null", "")]
        lines, _ = c.run(model, msgs, extra=["--env"], env=env, base=False)
        c.good(lines[0], model, msgs, key=key)
        rec = c.srv.records_of(model)[-1]
        check(rec["temperature"] == 0.5 and rec["max_tokens"] == 100 + seed, "env settings not sent: %r" % rec)
        env = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
        lines, _ = c.run(model, msgs, extra=["--env"], env=env, base=False)
        check("openai_api_key is not set" in lines[0].get("env_err", "").lower(), "no-key error: %r" % lines[0])
        env = {"OPENAI_BASE_URL": "ftp://x", "OPENAI_API_KEY": "k"}
        lines, _ = c.run(model, msgs, extra=["--env"], env=env, base=False)
        check("must start with http" in lines[0].get("env_err", ""), "bad-url error: %r" % lines[0])
        env = {"OPENAI_BASE_URL": c.srv.base_url, "SOLFORGE_OPENAI_RETRIES": "x"}
        lines, _ = c.run(model, msgs, extra=["--env"], env=env, base=False)
        check("solforge_openai_retries" in lines[0].get("env_err", "").lower(), "bad-number error: %r" % lines[0])
    add("cfg-from-env", from_env)
    return out


def nocurl_case(driver):
    def fn(c):
        (r,), wall = c.run("x/ok/seed=0", [("user", "/dev/null", "")], driver=driver)
        check(r["available"] == 0, "available %d" % r["available"])
        check(r["rc"] == -1 and r["err"] == "solforge was built without libcurl; install libcurl dev headers and "
              "rebuild", "err %r" % r["err"])
        check(not c.srv.records_of("x/ok/seed=0"), "a request was made")
    return ("no-curl-build", fn)


def main():
    if len(sys.argv) < 2:
        print("usage: openai_cases.py DRIVER [SEED...]", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2
    driver = sys.argv[1]
    seeds = [int(s) for s in sys.argv[2:]] or [random.Random(time.time_ns()).randint(1, 10**6) for _ in range(3)]
    print("seeds: %s" % " ".join(map(str, seeds)))
    srv = FakeServer()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    todo = []
    for s in seeds:
        todo += cases_for_seed(s)
    if os.environ.get("NOCURL_DRIVER"):
        todo.append(nocurl_case(os.environ["NOCURL_DRIVER"]))
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="sf-openai-") as tmp:
        c = Ctx(srv, driver, tmp)

        def one(item):
            name, fn = item
            try:
                fn(c)
                return name, None
            except Fail as e:
                return name, str(e)
            except Exception as e:  # a broken case is a failure too
                return name, "%s: %s" % (type(e).__name__, e)
        with ThreadPoolExecutor(max_workers=int(os.environ.get("OPENAI_TEST_JOBS", "6"))) as ex:
            for name, why in ex.map(one, todo):
                if why is None:
                    passed += 1
                    print("ok " + name)
                else:
                    failed += 1
                    print("FAIL %s: %s" % (name, why))
    srv.shutdown()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
