/*
 * embed.c - the web UI's asset generator: a program the Makefile builds and
 * runs at build time (it is no part of sluiced). It reads web/ and prints a
 * C file that embeds it as the table of src/ui/assets.h:
 *
 *   ui_embed [--require] [--node-modules DIR] [--list | --print PATH] WEBDIR
 *
 *   /ui/app.<hash>.js       uPlot's bundle (DIR/uplot/dist/uPlot.iife.min.js),
 *                           then each WEBDIR/js/NAME.js in name order (by
 *                           bytes, as strcmp sorts), each one after a newline
 *                           and a comment line that names it ("web/js/NAME.js")
 *   /ui/app.<hash>.css      DIR/uplot/dist/uPlot.min.css, then each
 *                           WEBDIR/css/NAME.css the same way
 *   /ui/favicon.<hash>.svg  WEBDIR/favicon.svg as it is, when there is one
 *   /ui/                    WEBDIR/index.html, with its quoted references to
 *                           /ui/app.js, /ui/app.css and /ui/favicon.svg
 *                           rewritten to the hashed names
 *
 * <hash> is the 64-bit FNV-1a hash of the entry's bytes in 16 hex digits,
 * and its ETag is the same digits quoted (the page shell's, of its bytes
 * after the rewrite, so that it changes whenever an asset does). DIR is
 * WEBDIR/node_modules unless --node-modules names another.
 *
 * Without the uPlot bundle (npm was not there to install it, or could not
 * fetch it) it embeds instead one page at /ui/ that says the web UI was not
 * built, why, and how to build it, and warns on stderr; with --require that
 * is an error (make ui). --list prints the table (path, Content-Type,
 * length, ETag, and "immutable" or "no-cache"), --print PATH the bytes of
 * one entry, in place of the C file: tests/integration/ui.t reads them.
 *
 * Exits 0, or 1 with a message on stderr: no index.html, a page shell that
 * does not reference /ui/app.js and /ui/app.css, a file name outside
 * [A-Za-z0-9._-], a file over MAX_FILE bytes, a read or write error.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (16u << 20) /* bytes of one input file */
#define MAX_NAMES 512        /* files in js/ or in css/ */
#define MAX_ASSETS 4

#define UPLOT_JS "uplot/dist/uPlot.iife.min.js"
#define UPLOT_CSS "uplot/dist/uPlot.min.css"

struct blob {
    unsigned char *data; /* owned */
    size_t len, cap;
};

struct asset {
    char path[64];
    const char *ctype;
    struct blob b;
    bool immutable;
    char hash[17]; /* 16 hex digits */
};

/* The page served at /ui/ when the build had no uPlot bundle. No inline
 * script or style: the same Content-Security-Policy covers it. */
static const char not_built_page[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<title>Sluice: the web UI was not built</title>\n"
    "</head>\n"
    "<body>\n"
    "<h1>The Sluice web UI was not built</h1>\n"
    "<p>This sluiced was built without its web UI. The dashboard needs the uPlot\n"
    "bundle (web/node_modules/uplot/dist/uPlot.iife.min.js), which npm installs,\n"
    "and it was missing at build time: npm was unavailable, or <code>npm ci</code>\n"
    "could not fetch the packages (no network).</p>\n"
    "<p>To build it, run <code>make</code> where npm is installed and can reach\n"
    "its registry, or <code>make ui</code>, which stops with an error when it\n"
    "cannot; then restart sluiced.</p>\n"
    "<p>The HTTP API under /v1 and the sluice command-line client work without\n"
    "it.</p>\n"
    "</body>\n"
    "</html>\n";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;

    fputs("ui_embed: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void blob_add(struct blob *b, const void *p, size_t n)
{
    if (n > MAX_FILE * 4u || b->len + n > MAX_FILE * 4u)
        die("an asset over %u bytes", MAX_FILE * 4u);
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        unsigned char *d;
        while (cap < b->len + n)
            cap *= 2;
        if (!(d = realloc(b->data, cap)))
            die("out of memory");
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void blob_str(struct blob *b, const char *s) { blob_add(b, s, strlen(s)); }

static void path_join(char *out, size_t size, const char *a, const char *b)
{
    if ((size_t)snprintf(out, size, "%s/%s", a, b) >= size)
        die("%s/%s: path too long", a, b);
}

/* Append the file at 'path' to 'b'. Returns 0, or -errno when it cannot be
 * opened and 'may_miss' (nothing appended); any other failure is fatal. */
static int file_add(struct blob *b, const char *path, bool may_miss)
{
    FILE *f = fopen(path, "rb");
    unsigned char buf[65536];
    size_t n, total = 0;

    if (!f) {
        int e = errno;
        if (may_miss)
            return -e;
        die("%s: %s", path, strerror(e));
    }
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        total += n;
        if (total > MAX_FILE)
            die("%s: larger than %u bytes", path, MAX_FILE);
        blob_add(b, buf, n);
    }
    if (ferror(f))
        die("%s: read error", path);
    fclose(f);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in 'dir' that end in 'ext' (".js"), dot files left out, sorted
 * by bytes; a missing directory has none. Returns how many; each is owned. */
static size_t list_dir(const char *dir, const char *ext, char **names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0, elen = strlen(ext);

    if (!d) {
        if (errno == ENOENT)
            return 0;
        die("%s: %s", dir, strerror(errno));
    }
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= elen || strcmp(e->d_name + len - elen, ext) != 0)
            continue;
        if (strspn(e->d_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              "0123456789._-") != len)
            die("%s/%s: a file name must be made of A-Z a-z 0-9 . _ -", dir, e->d_name);
        if (n == MAX_NAMES)
            die("%s: more than %d %s files", dir, MAX_NAMES, ext);
        if (!(names[n++] = strdup(e->d_name)))
            die("out of memory");
    }
    closedir(d);
    qsort(names, n, sizeof(*names), name_cmp);
    return n;
}

/* 'first' (uPlot's file), then every WEBDIR/SUB/NAME.EXT in name order,
 * each after a newline and a comment line naming it. */
static void concat(struct blob *out, const struct blob *first, const char *webdir,
                   const char *sub, const char *ext)
{
    char dir[4096], path[4096];
    char *names[MAX_NAMES];
    size_t n;

    blob_add(out, first->data, first->len);
    path_join(dir, sizeof(dir), webdir, sub);
    n = list_dir(dir, ext, names);
    for (size_t i = 0; i < n; i++) {
        blob_str(out, "\n/* web/");
        blob_str(out, sub);
        blob_str(out, "/");
        blob_str(out, names[i]);
        blob_str(out, " */\n");
        path_join(path, sizeof(path), dir, names[i]);
        file_add(out, path, false);
        free(names[i]);
    }
}

static void hash_hex(const struct blob *b, char out[17])
{
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a, 64 bits */

    for (size_t i = 0; i < b->len; i++) {
        h ^= b->data[i];
        h *= 0x100000001b3u;
    }
    snprintf(out, 17, "%016" PRIx64, h);
}

/* Copy 'in' to 'out', each quoted reference from[k] (between two equal
 * quotes, " or ') replaced by to[k]; found[k] counts them. */
static void rewrite_refs(const struct blob *in, struct blob *out, const char *const *from,
                         const char *const *to, int *found, int n)
{
    size_t i = 0;

    while (i < in->len) {
        unsigned char q = in->data[i];
        int k = n;
        if (q == '"' || q == '\'')
            for (k = 0; k < n; k++) {
                size_t fl = strlen(from[k]);
                if (i + fl + 2 <= in->len && memcmp(in->data + i + 1, from[k], fl) == 0 &&
                    in->data[i + 1 + fl] == q)
                    break;
            }
        if (k == n) {
            blob_add(out, &in->data[i++], 1);
            continue;
        }
        blob_add(out, &q, 1);
        blob_str(out, to[k]);
        blob_add(out, &q, 1);
        found[k]++;
        i += strlen(from[k]) + 2;
    }
}

/* Name 'a' by its bytes: "/ui/STEM.<hash>.EXT", immutable; or 'path' as it is
 * when STEM is NULL. */
static void asset_name(struct asset *a, const char *path, const char *stem, const char *ext,
                       const char *ctype)
{
    int len;

    hash_hex(&a->b, a->hash);
    a->ctype = ctype;
    a->immutable = stem != NULL;
    len = stem ? snprintf(a->path, sizeof(a->path), "/ui/%s.%s.%s", stem, a->hash, ext)
               : snprintf(a->path, sizeof(a->path), "%s", path);
    if (len < 0 || (size_t)len >= sizeof(a->path))
        die("%s: path too long", stem ? stem : path);
}

/* Fill 'as' from 'webdir' and 'nmdir'. Returns how many entries, and
 * whether the real UI was built (else the one not-built page). */
static size_t build(const char *webdir, const char *nmdir, bool require, struct asset *as,
                    bool *built)
{
    char path[4096];
    struct blob uplot_js = {0}, uplot_css = {0}, index = {0};
    const char *miss = NULL;
    int rc;
    size_t n = 0;

    path_join(path, sizeof(path), webdir, "index.html");
    file_add(&index, path, false);
    path_join(path, sizeof(path), nmdir, UPLOT_JS);
    if ((rc = file_add(&uplot_js, path, true)) < 0) {
        miss = UPLOT_JS;
    } else {
        path_join(path, sizeof(path), nmdir, UPLOT_CSS);
        if ((rc = file_add(&uplot_css, path, true)) < 0)
            miss = UPLOT_CSS;
    }
    if (miss) {
        if (require || (rc != -ENOENT && rc != -ENOTDIR))
            die("%s/%s: %s (npm ci in web/ installs it)", nmdir, miss, strerror(-rc));
        fprintf(stderr,
                "ui_embed: warning: %s/%s: %s; /ui/ only says that the web UI was not "
                "built (make ui builds it, with npm)\n",
                nmdir, miss, strerror(-rc));
        blob_str(&as[0].b, not_built_page);
        asset_name(&as[0], "/ui/", NULL, NULL, "text/html; charset=utf-8");
        *built = false;
        free(index.data);
        free(uplot_js.data);
        return 1;
    }

    n = 1; /* as[0] is the page shell, filled last */
    concat(&as[n].b, &uplot_js, webdir, "js", ".js");
    asset_name(&as[n++], NULL, "app", "js", "text/javascript; charset=utf-8");
    concat(&as[n].b, &uplot_css, webdir, "css", ".css");
    asset_name(&as[n++], NULL, "app", "css", "text/css; charset=utf-8");
    path_join(path, sizeof(path), webdir, "favicon.svg");
    if (file_add(&as[n].b, path, true) == 0)
        asset_name(&as[n++], NULL, "favicon", "svg", "image/svg+xml");
    {
        const char *from[] = {"/ui/app.js", "/ui/app.css", "/ui/favicon.svg"};
        const char *to[] = {as[1].path, as[2].path, n > 3 ? as[3].path : ""};
        int found[3] = {0};
        /* without a favicon.svg a reference to it is left alone (a 404) */
        rewrite_refs(&index, &as[0].b, from, to, found, n > 3 ? 3 : 2);
        for (int k = 0; k < 2; k++)
            if (!found[k])
                die("%s/index.html: no quoted reference to %s (the page shell loads the "
                    "bundle as href=\"/ui/app.css\" and src=\"/ui/app.js\")",
                    webdir, from[k]);
        asset_name(&as[0], "/ui/", NULL, NULL, "text/html; charset=utf-8");
    }
    *built = true;
    free(index.data);
    free(uplot_js.data);
    free(uplot_css.data);
    return n;
}

static void out_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_printf(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (vprintf(fmt, ap) < 0)
        die("write error: %s", strerror(errno));
    va_end(ap);
}

/* The C file: one array per entry (NUL-terminated, never empty), then the
 * table. */
static void emit_c(const struct asset *as, size_t n, bool built)
{
    out_printf("/* Generated by src/ui/embed.c from web/ (index.html, js/, css/,\n"
               " * favicon.svg) and the uPlot bundle npm installs in web/node_modules:\n"
               " * edit those, not this file. */\n"
               "#include \"src/ui/assets.h\"\n\n");
    for (size_t i = 0; i < n; i++) {
        char line[128];
        size_t col = 0;
        out_printf("static const unsigned char asset%zu[] = {\n", i);
        for (size_t j = 0; j <= as[i].b.len; j++) {
            unsigned v = j < as[i].b.len ? as[i].b.data[j] : 0;
            col += (size_t)snprintf(line + col, sizeof(line) - col, "%u,", v);
            if (col >= 76 || j == as[i].b.len) {
                out_printf("%s\n", line);
                col = 0;
            }
        }
        out_printf("};\n\n");
    }
    out_printf("/* path, Content-Type, bytes, length, immutable, ETag */\n"
               "const struct sl_ui_asset sl_ui_assets[] = {\n");
    for (size_t i = 0; i < n; i++)
        out_printf("    {\"%s\", \"%s\", asset%zu, %zu, %s, \"\\\"%s\\\"\"},\n", as[i].path,
                   as[i].ctype, i, as[i].b.len, as[i].immutable ? "true" : "false",
                   as[i].hash);
    out_printf("};\n\nconst size_t sl_ui_nassets = %zu;\nconst bool sl_ui_built = %s;\n", n,
               built ? "true" : "false");
}

static void usage(void)
{
    fputs("usage: ui_embed [--require] [--node-modules DIR] [--list | --print PATH] WEBDIR\n",
          stderr);
    exit(1);
}

int main(int argc, char **argv)
{
    struct asset as[MAX_ASSETS] = {0};
    const char *nmdir = NULL, *print = NULL, *webdir = NULL;
    char nmbuf[4096];
    bool require = false, list = false, built = false;
    size_t n;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--require") == 0)
            require = true;
        else if (strcmp(argv[i], "--list") == 0)
            list = true;
        else if (strcmp(argv[i], "--node-modules") == 0 && i + 1 < argc)
            nmdir = argv[++i];
        else if (strcmp(argv[i], "--print") == 0 && i + 1 < argc)
            print = argv[++i];
        else if (argv[i][0] == '-' || webdir)
            usage();
        else
            webdir = argv[i];
    }
    if (!webdir || (list && print))
        usage();
    if (!nmdir) {
        path_join(nmbuf, sizeof(nmbuf), webdir, "node_modules");
        nmdir = nmbuf;
    }
    n = build(webdir, nmdir, require, as, &built);
    if (list) {
        for (size_t i = 0; i < n; i++)
            out_printf("%s\t%s\t%zu\t\"%s\"\t%s\n", as[i].path, as[i].ctype, as[i].b.len,
                       as[i].hash, as[i].immutable ? "immutable" : "no-cache");
    } else if (print) {
        size_t i = 0;
        while (i < n && strcmp(as[i].path, print) != 0)
            i++;
        if (i == n)
            die("no entry %s", print);
        if (as[i].b.len && fwrite(as[i].b.data, as[i].b.len, 1, stdout) != 1)
            die("write error: %s", strerror(errno));
    } else {
        emit_c(as, n, built);
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        die("write error: %s", strerror(errno));
    for (size_t i = 0; i < n; i++)
        free(as[i].b.data);
    return 0;
}
