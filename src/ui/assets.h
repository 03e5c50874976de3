/*
 * assets.h - the web UI's files as sluiced embeds them: the table that
 * src/ui/embed.c generates from web/ at build time ($(B)/gen/ui_assets.c)
 * and src/api/api_ui.c serves under /ui/. sluiced never reads web/.
 *
 * Invariants: the first entry is the page shell at "/ui/" (web/index.html,
 * or, when the build had no uPlot bundle, the one page that says the web UI
 * was not built, and then the only entry); every other entry has a
 * content-hashed name ("/ui/app.0123456789abcdef.js") that the page shell
 * references and whose bytes never change. Read-only data: safe from any
 * thread.
 */
#ifndef SL_UI_ASSETS_H
#define SL_UI_ASSETS_H

#include <stdbool.h>
#include <stddef.h>

struct sl_ui_asset {
    const char *path;             /* URL path: "/ui/", "/ui/app.<16 hex>.js" */
    const char *ctype;            /* its Content-Type */
    const unsigned char *data;    /* 'len' bytes */
    size_t len;
    bool immutable;               /* a hashed name: cached for a year */
    const char *etag;             /* strong validator, quoted: "\"<16 hex>\"" */
};

extern const struct sl_ui_asset sl_ui_assets[];
extern const size_t sl_ui_nassets; /* >= 1 */
extern const bool sl_ui_built;      /* false: the not-built page alone */

#endif
