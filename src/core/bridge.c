/*
 * bridge.c - starting the PyTorch bridge and the input writer, reading their results (see bridge.h).
 */
#include "core/bridge.h"
#include "core/backend.h"
#include "core/json.h"
#include "core/spawn.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *sf_bridge_python(void)
{
	const char *p = getenv("SOLFORGE_PYTHON");
	return sf_xstrdup(p && *p ? p : "python3");
}

char *sf_bridge_script(const char *home)
{
	const char *p = getenv("SOLFORGE_BRIDGE");
	if (p && *p)
		return sf_xstrdup(p);
	return sf_path_join(home, "tools/bridge/solforge_bridge.py");
}

void sf_bridge_free(sf_bridge *br)
{
	free(br->why);
	free(br->torch_version);
	memset(br, 0, sizeof *br);
}

/* Reads the probe's one JSON line from its log: {"torch": VERSION|null, "error": WHY}. */
static void probe_read(sf_bridge *br, const char *logp)
{
	char *tail = sf_log_tail(logp, 4000);
	const char *line = NULL; /* the last line that starts with '{' */
	for (const char *p = tail; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (*p == '{')
			line = p;
	sf_json *j = NULL;
	char err[SF_ERRLEN];
	if (line)
		j = sf_json_parse(line, strcspn(line, "\n"), err, sizeof err);
	const sf_json *v = j ? sf_json_get(j, "torch") : NULL, *e = j ? sf_json_get(j, "error") : NULL;
	if (v && v->type == SF_JSON_STRING)
		br->torch_version = sf_xstrdup(v->str);
	if (e && e->type == SF_JSON_STRING) {
		free(br->why);
		br->why = sf_xstrdup(e->str);
	}
	sf_json_free(j);
	free(tail);
}

void sf_bridge_probe(sf_bridge *br, const char *home, const char *device, double timeout_s)
{
	if (br->probed)
		return;
	br->probed = 1;
	char *py = sf_bridge_python(), *script = sf_bridge_script(home);
	char err[SF_ERRLEN];
	char tmpl[] = "/tmp/solforge-probe-XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (!dir) {
		br->why = sf_xstrdup("cannot create a folder for the bridge probe");
		goto out;
	}
	char *logp = sf_path_join(dir, "probe.log");
	char *argv[] = { py, script, "--probe", "--device", (char *)device, NULL };
	sf_proc p;
	if (sf_spawn(argv, logp, timeout_s, NULL, &p, err, sizeof err)) {
		sf_buf b = { 0 };
		sf_buf_printf(&b, "cannot start %s: %s", py, err);
		br->why = sf_buf_take(&b);
	} else {
		probe_read(br, logp);
		if (p.exited && p.exit_code == 0 && br->torch_version) {
			br->usable = 1;
		} else if (!br->why) {
			char how[160];
			sf_proc_describe(&p, how, sizeof how);
			char *tail = sf_log_tail(logp, 600);
			sf_buf b = { 0 };
			sf_buf_printf(&b, "the bridge probe (%s %s --probe) %s: %s", py, script, how, tail ? tail : "");
			free(tail);
			br->why = sf_buf_take(&b);
		}
	}
	unlink(logp);
	rmdir(dir);
	free(logp);
out:
	free(py);
	free(script);
}

int sf_bridge_write_inputs(const sf_job *job, const char *cpu_module, const char *dir, double timeout_s, char *err,
			   size_t errlen)
{
	sf_job j = *job; /* shallow: only out_dir and problem_module differ */
	j.out_dir = (char *)dir;
	j.problem_module = (char *)(cpu_module ? cpu_module : "");
	sf_backend ib = sf_backend_cpu;
	ib.runner = "solforge-inputs";
	sf_runner_out r;
	int timed_out;
	sf_runner_run(&ib, &j, timeout_s, &r, &timed_out);
	int rc = 0;
	if (!r.ok) {
		sf_errf(err, errlen, "writing the inputs for the bridge failed: %s",
			r.message ? r.message : (timed_out ? "timed out" : "no result"));
		rc = -1;
	}
	sf_runner_out_free(&r);
	return rc;
}

/* Writes BRIDGE.json for the tasks. */
static char *bridge_json(const char *definition, const char *device, const char *inputs_dir,
			 const sf_bridge_task *t, int n, const sf_bridge_slot *slot)
{
	sf_buf b = { 0 };
	sf_buf_puts(&b, "{\"device\":");
	sf_buf_json_str(&b, device);
	if (slot && slot->lock) {
		sf_buf_puts(&b, ",\"gpu_slot\":{\"lock\":");
		sf_buf_json_str(&b, slot->lock);
		sf_buf_puts(&b, ",\"log\":");
		sf_buf_json_str(&b, slot->log ? slot->log : "");
		sf_buf_puts(&b, ",\"slot\":");
		sf_buf_json_str(&b, slot->slot ? slot->slot : "-");
		sf_buf_puts(&b, ",\"problem\":");
		sf_buf_json_str(&b, slot->problem ? slot->problem : "-");
		sf_buf_puts(&b, ",\"what\":");
		sf_buf_json_str(&b, slot->what ? slot->what : "-");
		sf_buf_puts(&b, "}");
	}
	if (slot && slot->what) { /* the workload, for the bridge's logs (also without a device slot) */
		sf_buf_puts(&b, ",\"problem\":");
		sf_buf_json_str(&b, slot->problem ? slot->problem : "-");
		sf_buf_puts(&b, ",\"what\":");
		sf_buf_json_str(&b, slot->what);
	}
	sf_buf_puts(&b, ",\"inputs_dir\":");
	sf_buf_json_str(&b, inputs_dir);
	sf_buf_puts(&b, ",\"definition\":");
	sf_buf_json_str(&b, definition);
	sf_buf_puts(&b, ",\"tasks\":[");
	for (int i = 0; i < n; i++) {
		sf_buf_puts(&b, i ? ",{\"role\":" : "{\"role\":");
		sf_buf_json_str(&b, t[i].role);
		sf_buf_puts(&b, ",\"name\":");
		sf_buf_json_str(&b, t[i].name ? t[i].name : "");
		sf_buf_puts(&b, ",\"source\":");
		sf_buf_json_str(&b, t[i].source ? t[i].source : "@reference");
		sf_buf_puts(&b, ",\"entry\":");
		sf_buf_json_str(&b, t[i].entry ? t[i].entry : "run");
		sf_buf_printf(&b, ",\"compile\":%s,\"time\":%s,\"out_dir\":", t[i].compile ? "true" : "false",
			      t[i].time ? "true" : "false");
		sf_buf_json_str(&b, t[i].out_dir);
		sf_buf_puts(&b, "}");
	}
	sf_buf_puts(&b, "]}\n");
	return sf_buf_take(&b);
}

void sf_bridge_run(const char *home, const sf_job *job, const char *definition, const char *device,
		   const char *inputs_dir, const char *work_dir, const sf_bridge_task *tasks, int n, double timeout_s,
		   const sf_bridge_slot *slot, sf_runner_out *outs, int *timed_out)
{
	memset(outs, 0, sizeof *outs * (size_t)n);
	*timed_out = 0;
	char err[SF_ERRLEN];
	char *jpath = sf_path_join(work_dir, "job.json"), *bpath = sf_path_join(work_dir, "bridge.json");
	char *logp = sf_path_join(work_dir, "bridge.log");
	char *py = sf_bridge_python(), *script = sf_bridge_script(home);
	char *jtext = sf_job_to_json(job), *btext = bridge_json(definition, device, inputs_dir, tasks, n, slot);
	int rc = sf_mkdir_p(work_dir, err, sizeof err);
	for (int i = 0; rc == 0 && i < n; i++)
		rc = sf_mkdir_p(tasks[i].out_dir, err, sizeof err);
	if (rc == 0)
		rc = sf_write_file(jpath, jtext, strlen(jtext), err, sizeof err);
	if (rc == 0)
		rc = sf_write_file(bpath, btext, strlen(btext), err, sizeof err);
	sf_proc p;
	memset(&p, 0, sizeof p);
	if (rc == 0) {
		char *argv[] = { py, script, jpath, bpath, NULL };
		rc = sf_spawn(argv, logp, timeout_s, NULL, &p, err, sizeof err);
	}
	char how[160] = "";
	if (rc == 0) {
		*timed_out = p.timed_out;
		sf_proc_describe(&p, how, sizeof how);
	}
	char *tail = rc == 0 ? sf_log_tail(logp, 2000) : NULL;
	for (int i = 0; i < n; i++) {
		sf_runner_out *r = &outs[i];
		int have = rc == 0 && !p.timed_out && sf_runner_read_result(tasks[i].out_dir, r) == 0;
		if (have)
			continue;
		sf_runner_out_free(r);
		sf_buf b = { 0 };
		if (rc)
			sf_buf_printf(&b, "cannot start the bridge: %s", err);
		else
			sf_buf_printf(&b, "the bridge %s without a result for %s\n%s", how,
				      tasks[i].name ? tasks[i].name : tasks[i].role, tail ? tail : "");
		r->message = sf_buf_take(&b);
	}
	free(tail);
	free(jtext);
	free(btext);
	free(py);
	free(script);
	free(jpath);
	free(bpath);
	free(logp);
}
