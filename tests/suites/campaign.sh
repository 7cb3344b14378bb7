#!/usr/bin/env bash
# tests/suites/campaign.sh - `solforge campaign` and `solforge report` end to end on the cpu backend.
#
# Fixture: tests/fixtures/campaign/camp_scale (y = alpha * x) whose only bundled solution, slow.c,
# recomputes its output REPEAT=3000 times and declares `solforge-tune: REPEAT=3000,300,1 UNROLL=1,2`.
# Cases:
#   tune      a tune campaign (2 workers) finds REPEAT=1: best speedup far above the seed's, every
#             variant evaluated exactly once, the planner's decisions recorded, timing holds disjoint
#   cmd       a cmd: campaign driving tests/fixtures/campaign/fake_agent.sh (a real subprocess that
#             edits its workspace, calls solforge eval itself, then lies): attempts, logs, lessons,
#             the official verdicts, the time limit
#   openai    an openai: campaign against tests/fixtures/campaign/fake_openai.py (a local server that
#             answers 429 first, then streams a fix): improvement, tokens, the evaluation fed back
#             (skipped, and said so, while the build has only the placeholder client)
#   resume    kill -9 in the middle of a tune campaign, then --resume: every evaluation finished
#             before the kill kept as it was and never redone, the space completed exactly once
#   report    the text report, and the HTML report rendered by headless Chromium: screenshot not
#             blank, the table's rows in the DOM
#   usage     missing --agent, a database without --resume, a missing database
# Prints FAIL lines and "N passed, M failed"; exits non-zero when anything failed.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SF=$BUILD/solforge
PROB=$ROOT/tests/fixtures/campaign/camp_scale
AGENT=$ROOT/tests/fixtures/campaign/fake_agent.sh
T=$(mktemp -d /tmp/sf-campaign.XXXXXX)
trap 'rm -rf "$T"' EXIT
# quick evaluations: the fixture's variants differ by orders of magnitude, far above timing noise
EV=(--backend cpu --budget-ms 40 --rounds 1 --min-iters 5)
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }
check() { if eval "$2"; then ok "$1"; else bad "$1" "$3"; fi; }
q() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchall(); print("\n".join("|".join("" if v is None else str(v) for v in row) for row in r))' "$@" 2>/dev/null; }

if ! "$SF" campaign --help >/dev/null 2>&1; then
	echo "FAIL build: $SF has no campaign command (built without SQLite?)"
	echo "0 passed, 1 failed"
	exit 1
fi

# ---- tune ----
DB=$T/tune.db
"$SF" campaign "$PROB" --agent tune --workers 2 --db "$DB" --tune-batch 2 --no-live "${EV[@]}" >"$T/tune.out" 2>&1
rc=$?
check tune-exit "[ $rc = 0 ]" "exit $rc: $(tail -5 "$T/tune.out")"
seed_sp=$(q "$DB" "SELECT e.speedup FROM evaluations e JOIN attempts a ON a.id=e.attempt_id WHERE a.agent='seed'")
best=$(q "$DB" "SELECT e.speedup, e.defines FROM problems p JOIN evaluations e ON e.id=p.best_eval")
best_sp=${best%%|*}
check tune-found-repeat1 "echo '$best' | grep -q 'REPEAT=1 '" "best is '$best'"
check tune-improves "python3 -c 'import sys; sys.exit(0 if float(\"$best_sp\") > 30*float(\"$seed_sp\") else 1)'" \
	"best speedup $best_sp vs seed $seed_sp"
n=$(q "$DB" "SELECT count(*), count(DISTINCT key) FROM evaluations")
check tune-each-variant-once "[ '$n' = '7|7' ]" "evaluations|distinct keys = $n (seed + 6 variants)"
d=$(q "$DB" "SELECT count(*) FROM decisions WHERE explain LIKE 'camp_scale: gain % = weight % x gap %'")
a=$(q "$DB" "SELECT count(*) FROM attempts")
check tune-decisions "[ '$d' = '$a' ] && [ '$a' -ge 4 ]" "$d decisions for $a attempts"
# the timed parts of the evaluations never overlapped (one timing slot, two workers)
check tune-timing-exclusive "python3 - '$DB.d/locks/timing.log' <<'PY'
import sys
rows = sorted((float(l.split()[0]), float(l.split()[4])) for l in open(sys.argv[1]) if l.strip())
assert len(rows) >= 14, rows
for (s0, h0), (s1, _) in zip(rows, rows[1:]):
    assert s1 >= s0 + h0 - 0.005, (s0, h0, s1)
PY" "timing.log holds overlap or are missing"
check tune-timing-imported "[ \"\$(q '$DB' 'SELECT count(*) FROM gpu_timing')\" -ge 14 ]" "gpu_timing rows missing"
# every recorded evaluation is one run's numbers: speedup = baseline / latency (geomeans of the same workloads), also
# where a confirmation run was taken (it used to mix the two runs' numbers)
check tune-numbers-of-one-run "python3 - '$DB' <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute('SELECT id, speedup, baseline_ms, latency_ms FROM evaluations WHERE passed > 0').fetchall()
assert rows, 'no passed evaluation'
for i, sp, b, l in rows:
    assert sp and b and l and abs(sp - b / l) <= 1e-6 * sp, (i, sp, b, l)
PY" "an evaluation's speedup is not its baseline / latency"

# ---- cmd: a scripted stand-in agent ----
DB=$T/cmd.db
FAKE_AGENT_LOG=$T/agent.txt "$SF" campaign "$PROB" --agent "cmd:sh '$AGENT'" --workers 1 --db "$DB" --max-attempts 4 \
	--agent-time 25s --no-live "${EV[@]}" >"$T/cmd.out" 2>&1
rc=$?
check cmd-exit "[ $rc = 0 ]" "exit $rc: $(tail -5 "$T/cmd.out")"
check cmd-attempts "[ \"\$(q '$DB' \"SELECT count(*) FROM attempts WHERE agent LIKE 'cmd:%'\")\" = 3 ]" \
	"$(q "$DB" 'SELECT id, agent, state, error FROM attempts')"
check cmd-own-eval "grep -q 'own eval exit 0' '$T/agent.txt'" "the agent's own solforge eval failed: $(cat "$T/agent.txt")"
imp=$(q "$DB" "SELECT a.agent, e.speedup FROM problems p JOIN evaluations e ON e.id=p.best_eval JOIN attempts a ON a.id=e.attempt_id")
check cmd-improves "echo '$imp' | grep -q '^cmd:'" "best found by '$imp'"
check cmd-lesson-recorded "[ \"\$(q '$DB' \"SELECT count(*) FROM lessons WHERE op_type='scale' AND text LIKE '%REPEAT is a wasted%'\")\" = 1 ]" \
	"lessons: $(q "$DB" 'SELECT * FROM lessons')"
check cmd-lesson-in-later-brief "grep -q 'ws=camp_scale-a3 lessons=1' '$T/agent.txt'" "$(cat "$T/agent.txt")"
lie=$(q "$DB" "SELECT status, improved FROM evaluations WHERE attempt_id=3")
check cmd-lie-not-believed "[ '$lie' = 'INCORRECT_NUMERICAL|0' ]" "the lying attempt's evaluation: '$lie'"
check cmd-no-lesson-from-liar "! q '$DB' 'SELECT text FROM lessons' | grep -q 'trust me'" "a failed attempt's notes became a lesson"
check cmd-time-limit "q '$DB' 'SELECT error FROM attempts WHERE id=4' | grep -q 'timed out after 25'" \
	"attempt 4: $(q "$DB" 'SELECT state, error FROM attempts WHERE id=4')"
check cmd-stream-captured "q '$DB' \"SELECT text FROM agent_logs WHERE attempt_id=2 AND kind='stream'\" | grep -q '\"type\":\"result\"'" \
	"agent event stream not stored"
check cmd-workspace "[ -d '$DB.d/ws/camp_scale-a2/problem' ] && [ ! -L '$DB.d/ws/camp_scale-a2/problem' ] && \
	[ \"\$(stat -c %a '$DB.d/ws/camp_scale-a2/problem/workload.jsonl')\" = 444 ] && cmp -s '$PROB/oracle.c' '$DB.d/ws/camp_scale-a2/problem/oracle.c' && \
	grep -q 'solforge-tune' '$DB.d/ws/camp_scale-a2/solution.c'" \
	"workspace of attempt 2 incomplete (problem/ must be a read-only copy, not a link)"
# the bundled solution includes scale_row.h by a relative path: the workspace copy names it absolutely
check cmd-workspace-includes "grep -q '^#include \"$PROB/solutions/scale_row.h\"' '$DB.d/ws/camp_scale-a2/solution.c'" \
	"$(grep -n include "$DB.d/ws/camp_scale-a2/solution.c" 2>&1 | head -5)"

# ---- hostile workers (the campaign review of session 25) ----
# (1) the worker loosens the tolerance of the problem itself, through the suite folder's path (a copy of the fixture
# here), and submits y = x (wrong: it ignores alpha); (2) its solution.c is a FIFO, whose reader could be fed other bytes
# than the ones the campaign stores
HP=$T/hostile/camp_scale
mkdir -p "$T/hostile" && cp -r "$PROB" "$HP"
{
	echo 'cd "$SOLFORGE_WORKSPACE" || exit 1'
	echo "chmod u+w '$HP/workload.jsonl'"
	echo "sed -i 's/\"inputs\"/\"tolerance\": {\"max_atol\": 1e9, \"max_rtol\": 1e9}, \"inputs\"/' '$HP/workload.jsonl'"
	echo "printf '#include \"solforge/solution.h\"\\nSF_EXPORT int run(const sf_call *c) { const float *x = c->inputs[0].data; float *y = c->outputs[0].data; for (int64_t i = 0; i < sf_numel(&c->outputs[0]); i++) y[i] = x[i]; return SF_OK; }\\n' >solution.c"
} >"$T/weaken.sh"
DB=$T/weaken.db
"$SF" campaign "$HP" --agent "cmd:sh '$T/weaken.sh'" --workers 1 --db "$DB" --max-attempts 2 --agent-time 20s --no-live \
	"${EV[@]}" >"$T/weaken.out" 2>&1
hostile_evals() { q "$1" "SELECT count(*) FROM evaluations e JOIN attempts a ON a.id=e.attempt_id WHERE a.agent LIKE 'cmd:%'"; }
check hostile-problem-edit-refused "grep -q 'tolerance' '$HP/workload.jsonl' && grep -q 'changed during the campaign' '$T/weaken.out' && \
	[ \"\$(hostile_evals '$DB')\" = 0 ]" "an edited problem was evaluated: $(tail -3 "$T/weaken.out")"
cp "$PROB/workload.jsonl" "$HP/workload.jsonl"
printf '%s\n' 'cd "$SOLFORGE_WORKSPACE" || exit 1' 'rm -f solution.c && mkfifo solution.c' >"$T/fifo.sh"
DB=$T/fifo.db
"$SF" campaign "$HP" --agent "cmd:sh '$T/fifo.sh'" --workers 1 --db "$DB" --max-attempts 2 --agent-time 20s --no-live \
	"${EV[@]}" >"$T/fifo.out" 2>&1
check hostile-fifo-refused "[ -p '$DB.d/ws/camp_scale-a2/solution.c' ] && grep -q 'not a regular file' '$T/fifo.out' && \
	[ \"\$(hostile_evals '$DB')\" = 0 ]" "a FIFO solution was evaluated: $(tail -3 "$T/fifo.out")"

# ---- openai: a chat model served by a local fake OpenAI-compatible server (429 first, then SSE) ----
DB=$T/openai.db
python3 "$ROOT/tests/fixtures/campaign/fake_openai.py" "$T/port" "$T/openai.log" &
srv=$!
for _ in $(seq 1 100); do [ -s "$T/port" ] && break; sleep 0.1; done
OPENAI_BASE_URL=http://127.0.0.1:$(cat "$T/port" 2>/dev/null)/v1 OPENAI_API_KEY=test-key "$SF" campaign "$PROB" \
	--agent openai:fake-model --turns 2 --max-attempts 2 --db "$DB" --no-live "${EV[@]}" >"$T/openai.out" 2>&1
rc=$?
kill $srv 2>/dev/null
{ wait $srv; } 2>/dev/null
if grep -q 'built without the http client' "$T/openai.out"; then
	echo "skip openai: this build has no openai client (src/agent/openai.c placeholder)"
else
	check openai-exit "[ $rc = 0 ]" "exit $rc: $(tail -5 "$T/openai.out")"
	b=$(q "$DB" "SELECT a.agent, e.defines IS NULL OR e.defines='' FROM problems p JOIN evaluations e ON e.id=p.best_eval JOIN attempts a ON a.id=e.attempt_id")
	check openai-improves "[ '$b' = 'openai:fake-model|1' ]" "best: '$b'"
	check openai-tokens "[ \"\$(q '$DB' \"SELECT prompt_tokens>1000 AND completion_tokens>0 FROM attempts WHERE agent='openai:fake-model'\")\" = 1 ]" \
		"$(q "$DB" 'SELECT id, agent, prompt_tokens, completion_tokens, error FROM attempts')"
	check openai-feedback "grep -q 'Official evaluation of your solution' '$T/openai.log' && grep -q '3 messages' '$T/openai.log'" \
		"the evaluation did not go back to the model: $(tail -c 600 "$T/openai.log")"
	check openai-reply-logged "q '$DB' \"SELECT text FROM agent_logs WHERE kind='reply'\" | grep -q 'REPEAT 1 keeps'" "reply not stored"
fi

# ---- kill -9, then --resume ----
DB=$T/kill.db
"$SF" campaign "$PROB" --agent tune --workers 1 --db "$DB" --tune-batch 6 --no-live "${EV[@]}" >"$T/kill1.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
	[ "$(q "$DB" 'SELECT count(*) FROM evaluations' 2>/dev/null)" -ge 3 ] 2>/dev/null && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
done
kill -9 $pid 2>/dev/null
killed=$?
{ wait $pid; } 2>/dev/null
before=$(q "$DB" "SELECT id, key, started, finished, speedup FROM evaluations ORDER BY id")
nb=$(echo "$before" | grep -c .)
check resume-killed-midway "[ $killed = 0 ] && [ $nb -ge 3 ] && [ $nb -lt 7 ]" "killed=$killed with $nb evaluations"
"$SF" campaign "$PROB" --agent tune --workers 2 --db "$DB" --tune-batch 6 --no-live "${EV[@]}" >"$T/kill2.out" 2>&1
check resume-needs-flag "[ $? = 2 ] && grep -q 'pass --resume' '$T/kill2.out'" "$(cat "$T/kill2.out")"
"$SF" campaign "$PROB" --agent tune --workers 2 --db "$DB" --tune-batch 6 --no-live --resume "${EV[@]}" >"$T/kill3.out" 2>&1
rc=$?
check resume-exit "[ $rc = 0 ]" "exit $rc: $(tail -5 "$T/kill3.out")"
after=$(q "$DB" "SELECT id, key, started, finished, speedup FROM evaluations ORDER BY id")
check resume-nothing-lost "[ \"\$(echo '$after' | head -n $nb)\" = '$before' ]" "rows before the kill changed"
check resume-complete-once "[ \"\$(q '$DB' 'SELECT count(*), count(DISTINCT key) FROM evaluations')\" = '7|7' ]" \
	"$(q "$DB" 'SELECT count(*), count(DISTINCT key) FROM evaluations')"
# no evaluation finished before the kill was run again: one evaluator log per key
redone=0
for key in $(echo "$before" | cut -d'|' -f2); do
	c=$(ls "$DB.d/evals" | grep -c "${key:0:12}\.log$")
	[ "$c" = 1 ] || redone=1
done
check resume-not-redone "[ $redone = 0 ]" "an evaluation finished before the kill was run again"
check resume-interrupted-attempt "[ \"\$(q '$DB' \"SELECT count(*) FROM attempts WHERE state='interrupted'\")\" = 1 ]" \
	"$(q "$DB" 'SELECT id, state FROM attempts')"
# an agent that had written its fix and was still running when the campaign was killed (-9, its process group): its
# first process dies with the campaign, what it started (here the script's sleep) is killed by --resume, which then
# evaluates that workspace before anything else
printf '%s\n' 'cd "$SOLFORGE_WORKSPACE" || exit 1' "sed -i 's/^#define REPEAT 3000/#define REPEAT 1/' solution.c" \
	"touch '$T/fixed'" 'sleep 120' >"$T/fix_sleep.sh"
DB=$T/recover.db
setsid "$SF" campaign "$PROB" --agent "cmd:sh '$T/fix_sleep.sh'" --workers 1 --db "$DB" --max-attempts 2 --agent-time 200s \
	--no-live "${EV[@]}" >"$T/rec1.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
	[ -f "$T/fixed" ] && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
done
kill -9 -- -$pid 2>/dev/null
{ wait $pid; } 2>/dev/null
"$SF" campaign "$PROB" --agent "cmd:sh '$T/fix_sleep.sh'" --workers 1 --db "$DB" --max-attempts 2 --agent-time 200s \
	--no-live --resume "${EV[@]}" >"$T/rec2.out" 2>&1
rec=$(q "$DB" "SELECT status, improved FROM evaluations WHERE attempt_id=2")
orphans=$(pgrep -f "$T/fix_sleep.sh" | wc -l)
check resume-no-agent-left "[ -f '$T/fixed' ] && [ $orphans = 0 ] && grep -q 'left running in the workspace of attempt 2' '$T/rec2.out'" \
	"fixed: $(ls "$T/fixed" 2>&1); processes of the killed agent still running: $orphans"
check resume-evaluates-interrupted-work "grep -q 'workspace of interrupted attempt 2' '$T/rec2.out' && [ '$rec' = 'PASSED|1' ]" \
	"attempt 2's evaluation: '$rec'; $(tail -3 "$T/rec2.out")"

# ---- report: text and HTML in Chromium ----
"$SF" report "$T/tune.db" --html "$T/report.html" >"$T/report.txt" 2>&1
rc=$?
check report-exit "[ $rc = 0 ]" "exit $rc: $(cat "$T/report.txt")"
check report-text "grep -q '^camp_scale .*REPEAT=1' '$T/report.txt' && grep -q 'geomean speedup' '$T/report.txt'" "$(cat "$T/report.txt")"
check report-self-contained "! grep -Eq '<script|src=\"http|href=\"http' '$T/report.html' && [ \"\$(grep -c '<svg' '$T/report.html')\" = 3 ]" \
	"the HTML loads something or lacks its charts"
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
	bad report-chromium "chromium is not installed (tools/deps.sh installs it)"
else
	cflags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$T/chrome")
	timeout 120 "$CHROME" "${cflags[@]}" --window-size=1200,1000 --screenshot="$T/shot.png" "file://$T/report.html" >/dev/null 2>&1
	check report-screenshot "python3 - '$T/shot.png' <<'PY'
import sys, zlib, struct
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'\x89PNG\r\n\x1a\n' and len(d) > 20000, len(d)
pos, idat, w, h = 8, b'', 0, 0
while pos < len(d):
    n, t = struct.unpack('>I4s', d[pos:pos + 8]); body = d[pos + 8:pos + 8 + n]; pos += 12 + n
    if t == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if t == b'IDAT': idat += body
raw = zlib.decompress(idat)
bpp = {2: 3, 6: 4}[ctype]
stride = w * bpp + 1
# colours present in the raw scanlines (filter bytes skipped; filtered values still differ when pixels do)
colours = set()
for y in range(0, h, 7):
    row = raw[y * stride + 1:(y + 1) * stride]
    for x in range(0, len(row), bpp * 13):
        colours.add(row[x:x + bpp])
assert w == 1200 and len(colours) > 20, (w, h, len(colours))
PY" "the screenshot is missing, tiny or of one colour"
	timeout 120 "$CHROME" "${cflags[@]}" --dump-dom "file://$T/report.html" >"$T/dom.html" 2>/dev/null
	check report-dom-table "python3 - '$T/dom.html' <<'PY'
import sys, re
dom = open(sys.argv[1]).read()
t = re.search(r'<table id=\"problems\">(.*?)</table>', dom, re.S).group(1)
rows = re.findall(r'<tr>(.*?)</tr>', t, re.S)
cells = [re.findall(r'<t[dh][^>]*>(.*?)</t[dh]>', r) for r in rows]
assert cells[0][0] == 'problem' and len(cells) == 2, cells
assert cells[0][6] == 'speedup' and cells[0][5] == 'vs first' and cells[0][12] == 'solution', cells[0]
assert cells[1][0] == 'camp_scale' and cells[1][6].endswith('x') and float(cells[1][6][:-1]) > 1, cells[1]
assert float(cells[1][5][:-1]) > 30, cells[1]  # the tuner's gain over slow.c as it came
assert 'REPEAT=1 ' in cells[1][12], cells[1]
PY" "the DOM's table is not the report's"
fi

# ---- usage ----
"$SF" campaign "$PROB" --db "$T/u.db" >"$T/u.out" 2>&1
check usage-no-agent "[ $? = 2 ] && grep -q 'agent is required' '$T/u.out'" "$(cat "$T/u.out")"
"$SF" campaign "$PROB" --agent magic --db "$T/u.db" >"$T/u.out" 2>&1
check usage-bad-agent "[ $? = 2 ]" "$(cat "$T/u.out")"
"$SF" report "$T/none.db" >"$T/u.out" 2>&1
check usage-report-missing "[ $? = 3 ] && grep -q 'no campaign database' '$T/u.out'" "$(cat "$T/u.out")"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
