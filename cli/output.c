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

/*
 * json_dumpf through a 64 KiB buffer: jansson's own file writer calls fwrite
 * for every token, two or three per value, and each takes the stream's lock
 * (8.7% of `memplan plan -o` on a 10^4-layer net, whose plan file is 29 MB).
 */
struct dump_buf {
	FILE *f;
	size_t n;
	char b[65536];
};

static int dump_flush(struct dump_buf *d)
{
	size_t n = d->n;

	d->n = 0;
	return n && fwrite(d->b, 1, n, d->f) != n ? -1 : 0;
}

static int dump_put(const char *s, size_t n, void *data)
{
	struct dump_buf *d = data;

	if (n > sizeof(d->b) - d->n && dump_flush(d) < 0)
		return -1;
	if (n > sizeof(d->b))
		return fwrite(s, 1, n, d->f) == n ? 0 : -1;
	memcpy(d->b + d->n, s, n);
	d->n += n;
	return 0;
}

static int out_dumpf(const json_t *root, FILE *f, size_t flags)
{
	struct dump_buf *d = mp_xmalloc(sizeof(*d));
	int rc;

	d->f = f;
	d->n = 0;
	rc = json_dump_callback(root, dump_put, d, flags);
	if (dump_flush(d) < 0)
		rc = -1;
	free(d);
	return rc;
}

void out_json(FILE *f, json_t *root)
{
	out_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
	fputc('\n', f);
	json_decref(root);
}

static int is_list(const char *key)
{
	return !strcmp(key, "layers") || !strcmp(key, "tensors") || !strcmp(key, "ops");
}

/* Free what json_dumps returned with jansson's allocator: inside
 * mp_json_arena_begin the string is the arena's, which free() must not
 * see. */
static void dumps_free(char *s)
{
	json_free_t jfree;

	json_get_alloc_funcs(NULL, &jfree);
	jfree(s);
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
		dumps_free(s);
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
			dumps_free(s);
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
	return out_commit(&o, out_dumpf(root, o.f, flags) < 0);
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

/* The curves' plot: its size and margins, and its scales. */
static const double svg_w = 960, svg_h = 540, svg_l = 90, svg_r = 80, svg_t = 56, svg_b = 64;

struct plot {
	const struct mp_analysis *a;
	uint32_t show;          /* strategies drawn (bits) */
	uint32_t n;             /* steps */
	double pw, ph;          /* the plot area */
	double unit, ystep, ytop;
	const char *uname;
	double lstep, ltop;     /* live tensors, on the right */
};

static double plot_x(const struct plot *P, uint32_t step)
{
	return svg_l + P->pw * ((P->n > 1) ? (double)(step) / (double)(P->n - 1) : 0.5);
}

static double plot_y(const struct plot *P, uint64_t bytes)
{
	return svg_t + P->ph * (1 - ((double)(bytes) / P->unit) / P->ytop);
}

static double plot_yl(const struct plot *P, double live)
{
	return svg_t + P->ph * (1 - (double)(live) / P->ltop);
}

/* The scales: the largest peak shown (l_peak at least) in B, KiB, MiB or
 * GiB, and the most live tensors. */
static void plot_scale(struct plot *P, const struct mp_analysis *a, uint32_t show)
{
	uint64_t ymax = a->lmin.bytes;
	uint32_t lmax = 1;

	P->a = a;
	P->show = show;
	P->n = a->route.n;
	P->pw = svg_w - svg_l - svg_r;
	P->ph = svg_h - svg_t - svg_b;
	P->unit = 1;
	P->uname = "B";
	for (uint32_t i = 0; i < a->n; i++) {
		if (!(show & (1u << a->r[i].strategy)))
			continue;
		if (a->r[i].sim.peak_bytes > ymax)
			ymax = a->r[i].sim.peak_bytes;
		for (uint32_t k = 0; k < P->n; k++)
			if (a->r[i].sim.steps[k].live > lmax)
				lmax = a->r[i].sim.steps[k].live;
	}
	if (ymax >= (1ull << 30)) {
		P->unit = 1 << 30;
		P->uname = "GiB";
	} else if (ymax >= (1ull << 20)) {
		P->unit = 1 << 20;
		P->uname = "MiB";
	} else if (ymax >= (1ull << 10)) {
		P->unit = 1 << 10;
		P->uname = "KiB";
	}
	P->ystep = nice_step((double)ymax / P->unit);
	P->ytop = ceil((double)ymax / P->unit / P->ystep) * P->ystep;
	if (P->ytop <= 0)
		P->ytop = 1;
	P->lstep = nice_step(lmax);
	P->ltop = ceil(lmax / P->lstep) * P->lstep;
}

/* The title, the grid, the axes and their ticks, the frame. */
static void plot_frame(FILE *f, const struct plot *P, const struct mp_net *net)
{
	const struct mp_analysis *a = P->a;
	const double L = svg_l, T = svg_t, pw = P->pw, ph = P->ph;
	double xs = nice_step(P->n);

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n", svg_w, svg_h, svg_w, svg_h);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"18\" font-weight=\"bold\">Memory per step: ", L);
	out_xml_text(f, net->name);
	fprintf(f, "</text>\n<text x=\"%.0f\" y=\"46\" fill=\"#555\">%u steps (%u forward, %u backward, %u optimizer); device %s</text>\n",
		L, P->n, a->route.n_fwd, a->route.n_bwd, a->route.n_opt, a->device.name);
	/* grid and left axis */
	for (double v = 0; v <= P->ytop + 1e-9; v += P->ystep) {
		double y = T + ph * (1 - v / P->ytop);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", L, y, L + pw, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 8, y + 4, v);
	}
	for (double v = 0; v <= P->ltop + 1e-9; v += P->lstep)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">%g</text>\n", L + pw + 8, plot_yl(P, v) + 4, v);
	fprintf(f, "<text transform=\"translate(24 %.1f) rotate(-90)\" text-anchor=\"middle\">device memory (%s)</text>\n", T + ph / 2, P->uname);
	fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(90)\" text-anchor=\"middle\" fill=\"#555\">live tensors (dotted)</text>\n", svg_w - 24, T + ph / 2);
	/* x axis ticks */
	for (double v = 0; v <= P->n; v += xs) {
		uint32_t st = v < 1 ? 1 : (uint32_t)v;

		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%u</text>\n", plot_x(P, st - 1), T + ph + 18, st);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", L + pw / 2, svg_h - 18);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n", L, T, pw, ph);
}

/* The phase boundaries and l_peak. */
static void plot_marks(FILE *f, const struct plot *P)
{
	const struct mp_route *route = &P->a->route;
	const double T = svg_t, ph = P->ph;
	uint64_t lpeak = P->a->lmin.bytes;
	char b1[32];

	if (route->n_fwd && route->n_fwd < P->n) {
		double x = (plot_x(P, route->n_fwd - 1) + plot_x(P, route->n_fwd)) / 2;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-dasharray=\"6 4\"/>\n", x, T, x, T + ph);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#333\">forward</text>\n", x - 6, T + 16);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#333\">backward</text>\n", x + 6, T + 16);
	}
	if (route->n_opt) {
		double x = (plot_x(P, P->n - route->n_opt - 1) + plot_x(P, P->n - route->n_opt)) / 2;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"2 3\"/>\n", x, T, x, T + ph);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9467bd\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n",
		svg_l, plot_y(P, lpeak), svg_l + P->pw, plot_y(P, lpeak));
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#9467bd\" stroke=\"white\" stroke-width=\"4\" paint-order=\"stroke\">l_peak (layer-wise minimum) %s</text>\n",
		svg_l + 8, plot_y(P, lpeak) + 16, mp_fmt_bytes(lpeak, b1, sizeof(b1)));
}

/* One strategy's curve, of bytes or (live) of live tensors: the most per
 * bucket when there are more steps than pixels. */
static void plot_curve(FILE *f, const struct plot *P, const struct mp_strategy_result *r, int live)
{
	uint32_t n = P->n, buckets = n > 2000 ? 2000 : n;

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
		fprintf(f, "%.1f,%.1f ", plot_x(P, at), live ? plot_yl(P, vl) : plot_y(P, vb));
	}
	fprintf(f, "\"/>\n");
}

/* The legend, on a white box over the plot. */
static void plot_legend(FILE *f, const struct plot *P)
{
	const struct mp_analysis *a = P->a;
	const double x0 = svg_l + P->pw;
	double y = svg_t + 34;
	uint32_t rows = 0;
	char b1[32];

	for (uint32_t i = 0; i < a->n; i++)
		rows += (P->show >> a->r[i].strategy) & 1;
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"240\" height=\"%u\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#ccc\"/>\n",
		x0 - 238, y - 18, rows * 18 + 10);
	for (uint32_t i = 0; i < a->n; i++) {
		const struct mp_strategy_result *r = &a->r[i];

		if (!(P->show & (1u << r->strategy)))
			continue;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
			x0 - 230, y - 4, x0 - 205, y - 4, colors[r->strategy]);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s, peak %s</text>\n", x0 - 198, y,
			mp_strategy_name(r->strategy), mp_fmt_bytes(r->sim.peak_bytes, b1, sizeof(b1)));
		y += 18;
	}
}

void out_svg_curves(FILE *f, const struct mp_net *net, const struct mp_analysis *a, uint32_t show)
{
	struct plot P;

	plot_scale(&P, a, show);
	plot_frame(f, &P, net);
	plot_marks(f, &P);
	for (uint32_t i = 0; i < a->n; i++) {
		if (!(show & (1u << a->r[i].strategy)))
			continue;
		for (int live = 0; live < 2; live++)
			plot_curve(f, &P, &a->r[i], live);
	}
	plot_legend(f, &P);
	fprintf(f, "</svg>\n");
}
