/*
 * report_html.c - the campaign report as one self-contained HTML file with inline SVG charts: the
 * speedup per problem, the SOL score distribution and the progress over time (see report.h).
 */
#include "campaign/report.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void esc(sf_buf *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': sf_buf_puts(b, "&lt;"); break;
		case '>': sf_buf_puts(b, "&gt;"); break;
		case '&': sf_buf_puts(b, "&amp;"); break;
		case '"': sf_buf_puts(b, "&quot;"); break;
		default: sf_buf_append(b, s, 1);
		}
	}
}

/* v with `prec` digits (significant when sig, else decimals) and a suffix; "-" when not finite. */
static void num(sf_buf *b, int prec, int sig, const char *suffix, double v)
{
	if (!isfinite(v))
		sf_buf_puts(b, "-");
	else if (sig)
		sf_buf_printf(b, "%.*g%s", prec, v, suffix);
	else
		sf_buf_printf(b, "%.*f%s", prec, v, suffix);
}

/* Horizontal bars: the best's gain over the first correct solution per problem (log2 axis around 1x). */
static void chart_speedup(sf_buf *b, const sf_report *r)
{
	int n = 0;
	double lo = 0.5, hi = 2;
	for (int i = 0; i < r->n; i++)
		if (r->p[i].has_best && isfinite(r->p[i].vs_first) && r->p[i].vs_first > 0) {
			n++;
			if (r->p[i].vs_first < lo)
				lo = r->p[i].vs_first;
			if (r->p[i].vs_first > hi)
				hi = r->p[i].vs_first;
		}
	int W = 760, row = 18, left = 260, H = 40 + row * (n ? n : 1);
	double l0 = log2(lo), l1 = log2(hi);
	double span = l1 - l0 > 0 ? l1 - l0 : 1;
	sf_buf_printf(b, "<svg id=\"chart-gain\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			 "viewBox=\"0 0 %d %d\"><title>gain of the best over the first solution per problem</title>\n", W, H, W, H);
	double x1 = left + (0 - l0) / span * (W - left - 60);
	sf_buf_printf(b, "<line x1=\"%.1f\" y1=\"10\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>"
			 "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">1x (first solution)</text>\n",
		      x1, x1, H - 20, x1, H - 6);
	int k = 0;
	for (int i = 0; i < r->n; i++) {
		const sf_rep_problem *p = &r->p[i];
		if (!p->has_best || !isfinite(p->vs_first) || p->vs_first <= 0)
			continue;
		double x = left + (log2(p->vs_first) - l0) / span * (W - left - 60);
		double y = 10 + k * row;
		double xa = x < x1 ? x : x1, w = fabs(x - x1) < 1 ? 1 : fabs(x - x1);
		sf_buf_printf(b, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">", left - 6, y + 12);
		esc(b, p->name);
		sf_buf_printf(b, "</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
				 "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%.2fx</text>\n",
			      xa, y + 2, w, row - 5, p->vs_first >= 1 ? "#2e8b57" : "#c0504d", (x > x1 ? x : x1) + 4, y + 12,
			      p->vs_first);
		k++;
	}
	sf_buf_puts(b, "</svg>\n");
}

/* Columns: how many problems' best SOL score falls in each tenth. */
static void chart_hist(sf_buf *b, const sf_report *r)
{
	int W = 420, H = 220, maxc = 1;
	for (int i = 0; i < 10; i++)
		if (r->hist[i] > maxc)
			maxc = r->hist[i];
	sf_buf_printf(b, "<svg id=\"chart-sol\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">"
			 "<title>SOL score distribution</title>\n", W, H, W, H);
	for (int i = 0; i < 10; i++) {
		double h = 150.0 * r->hist[i] / maxc, x = 30 + i * 38;
		sf_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"32\" height=\"%.1f\" fill=\"%s\"/>"
				 "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%d</text>"
				 "<text x=\"%.1f\" y=\"200\" font-size=\"10\" text-anchor=\"middle\">%.1f</text>\n",
			      x, 175 - h, h, i >= 5 ? "#4f81bd" : "#9bbb59", x + 16, 170 - h, r->hist[i], x + 16, i / 10.0);
	}
	sf_buf_puts(b, "<text x=\"210\" y=\"215\" font-size=\"11\" text-anchor=\"middle\">SOL score (0.5 = baseline, 1 = "
		       "hardware limit)</text></svg>\n");
}

/* Line: geomean best speedup after every improvement, over time (log axis: speedups span decades). */
static void chart_progress(sf_buf *b, const sf_report *r)
{
	int W = 560, H = 220;
	double tmax = 1, gmax = -INFINITY, gmin = INFINITY;
	for (int i = 0; i < r->n_pts; i++) {
		if (r->pts[i].t > tmax)
			tmax = r->pts[i].t;
		if (isfinite(r->pts[i].geomean) && r->pts[i].geomean > 0) {
			double l = log2(r->pts[i].geomean);
			gmax = l > gmax ? l : gmax;
			gmin = l < gmin ? l : gmin;
		}
	}
	if (!isfinite(gmin))
		gmin = gmax = 0;
	if (gmax - gmin < 0.1) {
		gmax += 0.5;
		gmin -= 0.5;
	}
	sf_buf_printf(b, "<svg id=\"chart-progress\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
			 "viewBox=\"0 0 %d %d\"><title>progress over time</title>\n"
			 "<line x1=\"50\" y1=\"180\" x2=\"540\" y2=\"180\" stroke=\"#444\"/><line x1=\"50\" y1=\"20\" x2=\"50\" "
			 "y2=\"180\" stroke=\"#444\"/>\n", W, H, W, H);
	sf_buf_puts(b, "<polyline fill=\"none\" stroke=\"#4f81bd\" stroke-width=\"2\" points=\"");
	double prev_y = -1, x = 50;
	for (int i = 0; i < r->n_pts; i++) {
		if (!isfinite(r->pts[i].geomean) || r->pts[i].geomean <= 0)
			continue;
		x = 50 + r->pts[i].t / tmax * 490;
		double y = 180 - (log2(r->pts[i].geomean) - gmin) / (gmax - gmin) * 150;
		if (prev_y >= 0)
			sf_buf_printf(b, "%.1f,%.1f ", x, prev_y); /* a step: the best holds until the next improvement */
		sf_buf_printf(b, "%.1f,%.1f ", x, y);
		prev_y = y;
	}
	sf_buf_puts(b, "\"/>\n");
	if (gmin < 0 && gmax > 0) {
		double y1 = 180 - (0 - gmin) / (gmax - gmin) * 150;
		sf_buf_printf(b, "<line x1=\"50\" y1=\"%.1f\" x2=\"540\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>"
				 "<text x=\"46\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">1x</text>\n", y1, y1, y1 + 3);
	}
	sf_buf_printf(b, "<text x=\"46\" y=\"24\" font-size=\"10\" text-anchor=\"end\">%.3gx</text>"
			 "<text x=\"46\" y=\"180\" font-size=\"10\" text-anchor=\"end\">%.3gx</text>"
			 "<text x=\"540\" y=\"196\" font-size=\"10\" text-anchor=\"end\">%.0f s</text>"
			 "<text x=\"295\" y=\"212\" font-size=\"11\" text-anchor=\"middle\">geomean best speedup after each "
			 "improvement (log scale)</text></svg>\n", exp2(gmax), exp2(gmin), tmax);
}

int sf_report_html(const sf_report *r, const char *path, char *err, size_t errlen)
{
	sf_buf b = { 0 };
	sf_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>solforge campaign report</title>\n"
			"<style>body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
			"table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}"
			"td:first-child,th:first-child,td.l,th.l{text-align:left}th{background:#eef2f7}"
			".cards{display:flex;gap:14px;flex-wrap:wrap;margin:12px 0}.card{background:#eef2f7;border-radius:6px;"
			"padding:10px 16px}.card b{display:block;font-size:22px}.good{color:#2e8b57}.bad{color:#c0504d}"
			"svg{background:#fafafa;border:1px solid #ddd;margin:6px 12px 6px 0}</style></head><body>\n");
	sf_buf_puts(&b, "<h1>solforge campaign report</h1>\n<p>database <code>");
	esc(&b, r->db);
	sf_buf_puts(&b, "</code>, agent <code>");
	esc(&b, r->agent ? r->agent : "?");
	sf_buf_puts(&b, "</code>, backend <code>");
	esc(&b, r->backend ? r->backend : "?");
	sf_buf_puts(&b, "</code>, started ");
	esc(&b, r->started ? r->started : "?");
	sf_buf_printf(&b, "; %lld attempts, %lld evaluations (%lld not correct).</p>\n<div class=\"cards\">",
		      (long long)r->attempts, (long long)r->evaluations, (long long)r->failed_evals);
	sf_buf_puts(&b, "<div class=\"card\" id=\"geomean\"><b>");
	num(&b, 3, 0, "x", r->geomean);
	sf_buf_puts(&b, "</b>geomean speedup</div><div class=\"card\"><b>");
	num(&b, 3, 0, "", r->median_s);
	sf_buf_printf(&b, "</b>median SOL score</div><div class=\"card\"><b>%d / %d</b>beat the baseline</div>"
			  "<div class=\"card\"><b>%d</b>over 2x</div><div class=\"card\"><b>%d</b>improved over their first "
			  "solution</div><div class=\"card\"><b>", r->beat, r->n_best, r->over2, r->improved_over_first);
	num(&b, 3, 0, "x", r->geomean_vs_first);
	sf_buf_puts(&b, "</b>geomean gain over the first solutions</div><div class=\"card\"><b>");
	num(&b, 3, 0, "", r->median_sol_frac);
	sf_buf_puts(&b, "</b>median T_sol / T</div></div>\n");
	sf_buf_puts(&b, "<h2>Problems</h2>\n<table id=\"problems\"><thead><tr><th>problem</th><th class=\"l\">op type</th><th>baseline ms</th>"
			"<th>first ms</th><th>best ms</th><th>vs first</th><th>speedup</th><th>SOL</th><th>T_sol/T</th><th>attempts</th><th>evaluations</th>"
			"<th class=\"l\">found by</th><th class=\"l\">solution</th></tr></thead><tbody>\n");
	for (int i = 0; i < r->n; i++) {
		const sf_rep_problem *p = &r->p[i];
		sf_buf_puts(&b, "<tr><td>");
		esc(&b, p->name);
		sf_buf_puts(&b, "</td><td class=\"l\">");
		esc(&b, p->op_type);
		sf_buf_puts(&b, "</td><td>");
		num(&b, 4, 1, "", p->baseline_ms);
		sf_buf_puts(&b, "</td><td>");
		num(&b, 4, 1, "", p->first_ms);
		sf_buf_puts(&b, "</td><td>");
		num(&b, 4, 1, "", p->best_ms);
		sf_buf_puts(&b, "</td><td>");
		num(&b, 3, 0, "x", p->vs_first);
		sf_buf_printf(&b, "</td><td class=\"%s\">", isfinite(p->speedup) && p->speedup >= 1 ? "good" : "bad");
		num(&b, 3, 0, "x", p->speedup);
		sf_buf_puts(&b, "</td><td>");
		num(&b, 3, 0, "", p->score);
		sf_buf_puts(&b, "</td><td>");
		num(&b, 3, 0, "", p->sol_frac);
		sf_buf_printf(&b, "</td><td>%lld</td><td>%lld</td><td class=\"l\">", (long long)p->attempts, (long long)p->evals);
		esc(&b, p->found_by);
		sf_buf_puts(&b, "</td><td class=\"l\">");
		esc(&b, p->solution);
		sf_buf_puts(&b, "</td></tr>\n");
	}
	sf_buf_puts(&b, "</tbody></table>\n<h2>Charts</h2>\n<div>");
	chart_speedup(&b, r);
	sf_buf_puts(&b, "</div><div>");
	chart_hist(&b, r);
	chart_progress(&b, r);
	sf_buf_puts(&b, "</div>\n");
	if (r->n_slots) {
		sf_buf_puts(&b, "<h2>Timing slots</h2><ul>");
		for (int i = 0; i < r->n_slots; i++) {
			sf_buf_puts(&b, "<li>");
			esc(&b, r->slots[i]);
			sf_buf_puts(&b, "</li>");
		}
		sf_buf_puts(&b, "</ul>\n");
	}
	sf_buf_printf(&b, "<h2>Planner decisions</h2><details><summary>%d decisions, newest first</summary><ol>", r->n_decisions);
	for (int i = 0; i < r->n_decisions; i++) {
		sf_buf_puts(&b, "<li>");
		esc(&b, r->decisions[i]);
		sf_buf_puts(&b, "</li>");
	}
	sf_buf_puts(&b, "</ol></details>\n</body></html>\n");
	int rc = sf_write_file(path, b.data, b.len, err, errlen);
	sf_buf_free(&b);
	return rc;
}
