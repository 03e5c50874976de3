/*
 * api_ui.c - the web UI under /ui/: the files src/ui/embed.c embedded at
 * build time (src/ui/assets.h), answered from memory without a token (the
 * pages call /v1 with their own bearer token). docs/daemon.md, "The web
 * UI", states the rules:
 *
 *   /ui                          301 to /ui/
 *   /ui/, /ui/NAME without a     the page shell (index.html), no-cache:
 *   dot and /ui/A/B...           the dashboard's own routes (/ui/jobs/42,
 *                                /ui/models/resnet@1.0: a model's version
 *                                has dots, and assets are never deeper)
 *   /ui/app.<hash>.js and the    the asset, cached for a year (immutable):
 *   other hashed names           its name changes with its bytes
 *   any other /ui/NAME.EXT       404
 *
 * Every answer carries the same security headers (a strict
 * Content-Security-Policy: the pages load nothing inline and nothing from
 * elsewhere), each file an ETag, and a matching If-None-Match gets 304.
 */
#include "api_int.h"

#include <stdio.h>
#include <string.h>

#include "../ui/assets.h"

/* On every answer under /ui. */
static const char security_headers[] =
    "X-Content-Type-Options: nosniff\r\n"
    "Referrer-Policy: no-referrer\r\n"
    "X-Frame-Options: DENY\r\n"
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; manifest-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n";

/* The entry a path under /ui/ names: the page shell for a path of more
 * than one segment after /ui/ or of one without a dot, else the asset of
 * exactly that name (every asset is /ui/NAME.EXT), or NULL. */
static const struct sl_ui_asset *ui_lookup(const char *path)
{
    const char *rest = strncmp(path, "/ui/", 4) == 0 ? path + 4 : path;

    if (strchr(rest, '/') || !strchr(rest, '.'))
        return &sl_ui_assets[0];
    for (size_t i = 1; i < sl_ui_nassets; i++)
        if (strcmp(sl_ui_assets[i].path, path) == 0)
            return &sl_ui_assets[i];
    return NULL;
}

void sl_api_route_ui(struct ctx *c)
{
    const char *path = sl_http_path(c->r);
    const struct sl_ui_asset *a;
    char opaque[64];

    sl_http_add_header_lines(c->r, security_headers);
    if (strcmp(path, "/ui") == 0) {
        sl_http_add_header(c->r, "Location", "/ui/");
        sl_http_reply(c->r, 301, "text/plain; charset=utf-8", "", 0);
        return;
    }
    if (!(a = ui_lookup(path))) {
        sl_http_reply_error(c->r, 404, "not_found", NULL, "no such file: %s", path);
        return;
    }
    sl_http_add_header(c->r, "Cache-Control",
                       a->immutable ? "public, max-age=31536000, immutable" : "no-cache");
    sl_http_add_header(c->r, "ETag", a->etag);
    /* the tag without its quotes, as If-None-Match is matched against it */
    snprintf(opaque, sizeof(opaque), "%.*s", (int)strlen(a->etag) - 2, a->etag + 1);
    if (sl_http_none_match(c->r, opaque)) {
        sl_http_reply(c->r, 304, a->ctype, "", 0);
        return;
    }
    sl_http_reply(c->r, 200, a->ctype, a->data, a->len);
}
