/*
 * trace.c - one JSON line per evaluated workload, compatible with SOL-ExecBench / FlashInfer-Bench
 * traces (definition, workload, solution, evaluation{status, log, correctness, performance,
 * environment, timestamp}), plus solforge's own fields under evaluation.solforge.
 */
#include "core/eval.h"
#include "core/util.h"

#include <math.h>
#include <string.h>

static void workload_json(sf_buf *b, const sf_workload *w)
{
	sf_buf_puts(b, "{\"uuid\":");
	sf_buf_json_str(b, w->uuid);
	sf_buf_puts(b, ",\"axes\":{");
	for (int i = 0; i < w->n_axes; i++) {
		if (i)
			sf_buf_puts(b, ",");
		sf_buf_json_str(b, w->axis_names[i]);
		sf_buf_printf(b, ":%lld", (long long)w->axis_values[i]);
	}
	sf_buf_puts(b, "},\"inputs\":{");
	static const char *const types[] = { "random", "scalar", "safetensors", "custom" };
	for (int i = 0; i < w->n_inputs; i++) {
		const sf_winput *in = &w->inputs[i];
		if (i)
			sf_buf_puts(b, ",");
		sf_buf_json_str(b, in->name);
		sf_buf_printf(b, ":{\"type\":\"%s\"", types[in->type]);
		if (in->type == SF_WIN_SCALAR) {
			sf_buf_puts(b, ",\"value\":");
			sf_buf_json_num(b, in->value);
		} else if (in->type == SF_WIN_SAFETENSORS) {
			sf_buf_puts(b, ",\"path\":");
			sf_buf_json_str(b, in->path);
			sf_buf_puts(b, ",\"tensor_key\":");
			sf_buf_json_str(b, in->key);
		}
		sf_buf_puts(b, "}");
	}
	sf_buf_puts(b, "}}");
}

static void num_field(sf_buf *b, const char *name, double v)
{
	sf_buf_printf(b, ",\"%s\":", name);
	if (isnan(v))
		sf_buf_puts(b, "null");
	else
		sf_buf_json_num(b, v);
}

void sf_trace_line(const sf_eval *e, const sf_wresult *r, const char *backend, sf_buf *b)
{
	sf_buf_puts(b, "{\"definition\":");
	sf_buf_json_str(b, e->def.name);
	sf_buf_puts(b, ",\"workload\":");
	workload_json(b, r->w);
	sf_buf_puts(b, ",\"solution\":");
	sf_buf_json_str(b, e->sol.name);
	sf_buf_printf(b, ",\"evaluation\":{\"status\":\"%s\",\"log\":", sf_status_name(r->status));
	sf_buf_json_str(b, r->log ? r->log : "");
	if (r->have_check && (r->status == SF_PASSED || r->status == SF_INCORRECT_NUMERICAL)) {
		sf_buf_puts(b, ",\"correctness\":{");
		sf_buf_puts(b, "\"max_relative_error\":");
		sf_buf_json_num(b, r->check.max_rel);
		sf_buf_puts(b, ",\"max_absolute_error\":");
		sf_buf_json_num(b, r->check.max_abs);
		sf_buf_puts(b, ",\"extra\":{\"matched_ratio\":");
		sf_buf_json_num(b, r->check.matched_ratio);
		sf_buf_puts(b, "}}");
	}
	if (r->status == SF_PASSED && r->have_tk) {
		sf_buf_puts(b, ",\"performance\":{\"latency_ms\":");
		sf_buf_json_num(b, r->tk.median);
		sf_buf_puts(b, ",\"reference_latency_ms\":");
		sf_buf_json_num(b, r->have_tb ? r->tb.median : 0);
		sf_buf_puts(b, ",\"speedup_factor\":");
		sf_buf_json_num(b, isnan(r->speedup) ? 0 : r->speedup);
		sf_buf_puts(b, "}");
	}
	sf_buf_puts(b, ",\"environment\":{\"hardware\":");
	sf_buf_json_str(b, e->device ? e->device : "unknown");
	sf_buf_puts(b, ",\"libs\":{\"solforge\":\"" "0.1" "\",\"backend\":");
	sf_buf_json_str(b, backend);
	sf_buf_puts(b, "}},\"timestamp\":");
	sf_buf_json_str(b, r->timestamp);
	/* solforge's own fields */
	sf_buf_puts(b, ",\"solforge\":{\"hw_spec\":");
	sf_buf_json_str(b, e->hw->name);
	if (r->have_sol) {
		num_field(b, "sol_ms", r->sol.t_sol * 1e3);
		sf_buf_puts(b, ",\"sol_bound_by\":");
		sf_buf_json_str(b, sf_sol_binding_name(&r->sol));
		num_field(b, "bytes", r->sol.bytes);
		sf_buf_puts(b, ",\"flops\":{");
		int first = 1;
		for (int u = 0; u < SF_UNIT_COUNT; u++) {
			if (r->sol.flops[u] <= 0)
				continue;
			sf_buf_printf(b, "%s\"%s\":", first ? "" : ",", sf_unit_name(u));
			sf_buf_json_num(b, r->sol.flops[u]);
			first = 0;
		}
		sf_buf_puts(b, "}");
	}
	num_field(b, "sol_score", r->score);
	if (!isnan(r->clock_ms))
		num_field(b, "external_ms", r->clock_ms);
	if (!isnan(r->sol_measured_s)) {
		num_field(b, "sol_measured_ms", r->sol_measured_s * 1e3);
		num_field(b, "sol_score_measured", r->score_measured);
	}
	if (!isnan(r->unchecked_ms)) /* --diag-time-failed: never a performance result */
		num_field(b, "diag_unchecked_latency_ms", r->unchecked_ms);
	if (!isnan(r->copy_s)) {
		num_field(b, "copy_ms", r->copy_s * 1e3);
		num_field(b, "copy_bytes", r->copy_bytes);
		num_field(b, "bw_fraction_of_copy", r->bw_fraction);
		if (r->have_tk && r->tk.median > 0)
			num_field(b, "bytes_per_s", r->sol.bytes / (r->tk.median * 1e-3));
	}
	if (!isnan(r->read_s)) {
		num_field(b, "read_ms", r->read_s * 1e3);
		num_field(b, "read_bytes", r->read_bytes);
		num_field(b, "bw_fraction_of_read", r->read_fraction);
	}
	if (r->baseline) {
		sf_buf_puts(b, ",\"baseline\":");
		sf_buf_json_str(b, r->baseline);
	}
	if (r->have_tk) {
		num_field(b, "latency_min_ms", r->tk.min);
		num_field(b, "latency_p10_ms", r->tk.p10);
		num_field(b, "latency_p90_ms", r->tk.p90);
		num_field(b, "latency_rel_ci", r->tk.rel_ci);
		sf_buf_printf(b, ",\"timed_calls\":%d", r->tk.n);
		sf_buf_puts(b, ",\"timing_method\":");
		sf_buf_json_str(b, r->timing_method ? r->timing_method : "");
		sf_buf_puts(b, e->flush_reads ? ",\"l2_flush\":\"reads\"" : ",\"l2_flush\":\"memset\"");
	}
	if (r->baselines_json) { /* every baseline's outcome (and the --xval cross-check): docs/bridge.md */
		sf_buf_printf(b, ",\"baselines\":[%s]", r->baselines_json);
	}
	if (r->have_tb) {
		num_field(b, "baseline_min_ms", r->tb.min);
		num_field(b, "baseline_rel_ci", r->tb.rel_ci);
	}
	sf_buf_printf(b, ",\"rounds\":%d", r->have_check ? r->rounds : 0);
	num_field(b, "wall_s", r->wall_s);
	sf_buf_puts(b, "}}}\n");
}
