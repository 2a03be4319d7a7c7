/*
 * Output writers shared by subcommands: JSON (via jansson, so it is always
 * valid), net files one layer per line (gen, profile), the phase label of a
 * step, and the SVG chart of per-step memory (SuperNeurons Fig. 10: bytes per
 * step per strategy, live tensors on a second axis, forward/backward
 * boundary, l_peak).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

void out_json(FILE *f, json_t *root)
{
	json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
	fputc('\n', f);
	json_decref(root);
}

static int is_list(const char *key)
{
	return !strcmp(key, "layers") || !strcmp(key, "tensors") || !strcmp(key, "ops");
}

int out_net_json(FILE *f, const json_t *root, int real_digits)
{
	static const char *const lists[] = { "layers", "tensors", "ops" };
	const size_t flags = JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(real_digits);
	const char *sep = "{", *key;
	json_t *v;

	json_object_foreach((json_t *)root, key, v) {
		char *s;

		if (is_list(key))
			continue;
		if (!(s = json_dumps(v, flags)))
			return -1;
		fprintf(f, "%s\"%s\": %s", sep, key, s);
		free(s);
		sep = ",\n ";
	}
	for (unsigned k = 0; k < 3; k++) {
		json_t *list = json_object_get(root, lists[k]);

		if (!list)
			continue;
		fprintf(f, "%s\"%s\": [\n", sep, lists[k]);
		for (size_t i = 0; i < json_array_size(list); i++) {
			char *s = json_dumps(json_array_get(list, i), flags);

			if (!s)
				return -1;
			fprintf(f, "  %s%s\n", s, i + 1 < json_array_size(list) ? "," : "");
			free(s);
		}
		fputs(" ]", f);
		sep = ",\n ";
	}
	fputs("}\n", f);
	return ferror(f) ? -1 : 0;
}

int out_open(struct out_file *o, const char *path, const char *what)
{
	struct stat st;
	mode_t mask;
	size_t n;
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	o->what = what;
	/* through a link: replace the file it names, not the link */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && (o->real = realpath(path, NULL)))
		o->target = o->real;
	else
		o->target = path;
	/* a device or a pipe (/dev/stdout) cannot be renamed over: write into it */
	if (stat(o->target, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (!(o->f = fopen(o->target, "w"))) {
			free(o->real);
			return cli_error(EXIT_BAD_INPUT, "%s: cannot write '%s': %s", what, path, strerror(errno));
		}
		return EXIT_OK;
	}
	n = strlen(o->target) + 8;
	o->tmp = mp_xmalloc(n);
	snprintf(o->tmp, n, "%s.XXXXXX", o->target);
	mask = umask(0);
	umask(mask);
	if ((fd = mkstemp(o->tmp)) < 0)
		goto fail;
	/* mkstemp makes it 0600: give it the mode a new file would have */
	if (fchmod(fd, 0666 & ~mask) < 0 || !(o->f = fdopen(fd, "w"))) {
		int e = errno;

		close(fd);
		unlink(o->tmp);
		errno = e;
		goto fail;
	}
	return EXIT_OK;
fail:
	cli_error(EXIT_BAD_INPUT, "%s: cannot write '%s': %s", what, path, strerror(errno));
	free(o->tmp);
	free(o->real);
	memset(o, 0, sizeof(*o));
	return EXIT_BAD_INPUT;
}

void out_abort(struct out_file *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->real);
	memset(o, 0, sizeof(*o));
}

int out_commit(struct out_file *o, bool failed)
{
	int e = failed ? errno : 0, bad = failed || ferror(o->f), rc = EXIT_OK;

	/* the first error's errno: a writer's, or the flush's, sync's, close's */
	if (fflush(o->f) != 0 && (bad = 1) && !e)
		e = errno;
	if (!bad && o->tmp && fsync(fileno(o->f)) < 0 && (bad = 1))
		e = errno;
	if (fclose(o->f) != 0 && (bad = 1) && !e)
		e = errno;
	o->f = NULL;
	if (bad)
		rc = cli_error(EXIT_BAD_INPUT, "%s: writing '%s' failed: %s", o->what, o->path,
			       e ? strerror(e) : "a value cannot be encoded");
	else if (o->tmp && rename(o->tmp, o->target) < 0)
		rc = cli_error(EXIT_BAD_INPUT, "%s: cannot write '%s': %s", o->what, o->path, strerror(errno));
	if (rc != EXIT_OK && o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->real);
	memset(o, 0, sizeof(*o));
	return rc;
}

int out_net_file(const char *path, const json_t *root, int real_digits, const char *what)
{
	struct out_file o;
	int rc = out_open(&o, path, what);

	if (rc != EXIT_OK)
		return rc;
	return out_commit(&o, out_net_json(o.f, root, real_digits) < 0);
}

int out_json_file(const char *path, const json_t *root, size_t flags, const char *what)
{
	struct out_file o;
	int rc = out_open(&o, path, what);

	if (rc != EXIT_OK)
		return rc;
	return out_commit(&o, json_dumpf(root, o.f, flags) < 0);
}

const char *out_step_phase(const struct mp_net *net, const struct mp_analysis *a, uint32_t step)
{
	return mp_phase_name(net->ops[a->route.op[step]].phase);
}

void out_csv_field(FILE *f, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

bool out_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, b))
		return true;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void out_xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* A tick step of 1, 2 or 5 times a power of ten covering max in ~5 ticks. */
static double nice_step(double max)
{
	double raw = max / 5, p, m;

	if (raw <= 0)
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static const char *const colors[MP_STRAT__COUNT] = { "#7f7f7f", "#1f77b4", "#2ca02c", "#d62728" };

void out_svg_curves(FILE *f, const struct mp_net *net, const struct mp_analysis *a, uint32_t show)
{
	const double W = 960, H = 540, L = 90, R = 80, T = 56, B = 64;
	const double pw = W - L - R, ph = H - T - B;
	uint32_t n = a->route.n, buckets = n > 2000 ? 2000 : n;
	uint64_t ymax = a->lmin.bytes;
	uint32_t lmax = 1;
	double unit = 1, ystep;
	const char *uname = "B";
	char b1[32];

	for (uint32_t i = 0; i < a->n; i++) {
		if (!(show & (1u << a->r[i].strategy)))
			continue;
		if (a->r[i].sim.peak_bytes > ymax)
			ymax = a->r[i].sim.peak_bytes;
		for (uint32_t k = 0; k < n; k++)
			if (a->r[i].sim.steps[k].live > lmax)
				lmax = a->r[i].sim.steps[k].live;
	}
	if (ymax >= (1ull << 30)) {
		unit = 1 << 30;
		uname = "GiB";
	} else if (ymax >= (1ull << 20)) {
		unit = 1 << 20;
		uname = "MiB";
	} else if (ymax >= (1ull << 10)) {
		unit = 1 << 10;
		uname = "KiB";
	}
	ystep = nice_step((double)ymax / unit);
	double ytop = ceil((double)ymax / unit / ystep) * ystep;
	if (ytop <= 0)
		ytop = 1;
	double lstep = nice_step(lmax), ltop = ceil(lmax / lstep) * lstep;
#define X(step) (L + pw * ((n > 1) ? (double)(step) / (double)(n - 1) : 0.5))
#define Y(bytes) (T + ph * (1 - ((double)(bytes) / unit) / ytop))
#define YL(live) (T + ph * (1 - (double)(live) / ltop))

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n", W, H, W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"18\" font-weight=\"bold\">Memory per step: ", L);
	out_xml_text(f, net->name);
	fprintf(f, "</text>\n<text x=\"%.0f\" y=\"46\" fill=\"#555\">%u steps (%u forward, %u backward, %u optimizer); device %s</text>\n",
		L, n, a->route.n_fwd, a->route.n_bwd, a->route.n_opt, a->device.name);
	/* grid and left axis */
	for (double v = 0; v <= ytop + 1e-9; v += ystep) {
		double y = T + ph * (1 - v / ytop);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", L, y, L + pw, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 8, y + 4, v);
	}
	for (double v = 0; v <= ltop + 1e-9; v += lstep)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">%g</text>\n", L + pw + 8, YL(v) + 4, v);
	fprintf(f, "<text transform=\"translate(24 %.1f) rotate(-90)\" text-anchor=\"middle\">device memory (%s)</text>\n", T + ph / 2, uname);
	fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(90)\" text-anchor=\"middle\" fill=\"#555\">live tensors (dotted)</text>\n", W - 24, T + ph / 2);
	/* x axis ticks */
	{
		double xs = nice_step(n);

		for (double v = 0; v <= n; v += xs) {
			uint32_t st = v < 1 ? 1 : (uint32_t)v;

			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%u</text>\n", X(st - 1), T + ph + 18, st);
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", L + pw / 2, H - 18);
	}
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", L, T, pw, ph);
	/* phase boundaries */
	if (a->route.n_fwd && a->route.n_fwd < n) {
		double x = (X(a->route.n_fwd - 1) + X(a->route.n_fwd)) / 2;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-dasharray=\"6 4\"/>\n", x, T, x, T + ph);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#333\">forward</text>\n", x - 6, T + 16);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#333\">backward</text>\n", x + 6, T + 16);
	}
	if (a->route.n_opt) {
		double x = (X(n - a->route.n_opt - 1) + X(n - a->route.n_opt)) / 2;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"2 3\"/>\n", x, T, x, T + ph);
	}
	/* l_peak */
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9467bd\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n",
		L, Y(a->lmin.bytes), L + pw, Y(a->lmin.bytes));
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#9467bd\" stroke=\"white\" stroke-width=\"4\" paint-order=\"stroke\">l_peak (layer-wise minimum) %s</text>\n",
		L + 8, Y(a->lmin.bytes) + 16, mp_fmt_bytes(a->lmin.bytes, b1, sizeof(b1)));
	/* curves: max per bucket when there are more steps than pixels */
	for (uint32_t i = 0; i < a->n; i++) {
		const struct mp_strategy_result *r = &a->r[i];

		if (!(show & (1u << r->strategy)))
			continue;
		for (int live = 0; live < 2; live++) {
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"",
				colors[r->strategy], live ? "1" : "2",
				live ? " stroke-dasharray=\"1 3\" stroke-opacity=\"0.8\"" : "");
			for (uint32_t bk = 0; bk < buckets; bk++) {
				uint32_t lo = (uint32_t)((uint64_t)bk * n / buckets);
				uint32_t hi = (uint32_t)((uint64_t)(bk + 1) * n / buckets);
				uint64_t vb = 0;
				uint32_t vl = 0, at = lo;

				for (uint32_t k = lo; k < hi; k++) {
					if (r->sim.steps[k].bytes >= vb) {
						vb = r->sim.steps[k].bytes;
						at = k;
					}
					if (r->sim.steps[k].live > vl)
						vl = r->sim.steps[k].live;
				}
				fprintf(f, "%.1f,%.1f ", X(at), live ? YL(vl) : Y(vb));
			}
			fprintf(f, "\"/>\n");
		}
	}
	/* legend, on a white box over the plot */
	{
		double y = T + 34;
		uint32_t rows = 0;

		for (uint32_t i = 0; i < a->n; i++)
			rows += (show >> a->r[i].strategy) & 1;
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"240\" height=\"%u\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#ccc\"/>\n",
			L + pw - 238, y - 18, rows * 18 + 10);
		for (uint32_t i = 0; i < a->n; i++) {
			const struct mp_strategy_result *r = &a->r[i];

			if (!(show & (1u << r->strategy)))
				continue;
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
				L + pw - 230, y - 4, L + pw - 205, y - 4, colors[r->strategy]);
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s, peak %s</text>\n", L + pw - 198, y,
				mp_strategy_name(r->strategy), mp_fmt_bytes(r->sim.peak_bytes, b1, sizeof(b1)));
			y += 18;
		}
	}
	fprintf(f, "</svg>\n");
#undef X
#undef Y
#undef YL
}
