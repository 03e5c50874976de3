/*
 * api.h - the /v1 JSON API: one route table, bearer-token authentication,
 * request validation, and the glue that hands changes to the engine.
 *
 * All functions run on the HTTP server thread, except the operation
 * completions, which run on the engine thread and only answer and resume.
 */
#ifndef SL_API_H
#define SL_API_H

#include "../engine/engine.h"
#include "../http/http.h"

struct sl_api;

/* Create the API over 'e' (borrowed). Opens its own reader connection to
 * the store. Returns NULL with 'err' filled. */
struct sl_api *sl_api_create(struct sl_engine *e, struct sl_error *err);
void sl_api_destroy(struct sl_api *a); /* NULL-safe */

/* The sl_http_handler for the server; 'arg' is the struct sl_api. */
void sl_api_handle(struct sl_http_req *req, void *arg);
/* Several daemons on one store: GET /v1/status answers status(arg) (a new
 * reference) and /metrics appends metrics(arg, b). Before serving. */
void sl_api_set_ha(struct sl_api *a, json_t *(*status)(void *arg),
                   void (*metrics)(void *arg, struct sl_buf *b), void *arg);
/* Sign-in through the identity provider of 'id' (src/ident/ident.h; it
 * must outlive the API): starts the login workers. Before serving.
 * Returns 0, or a negative errno with 'err' filled. */
struct sl_ident;
struct sl_error;
/* Before the engine and the server stop: the login workers answer what
 * they hold and stop (sl_api_destroy does the rest). */
void sl_api_quiesce(struct sl_api *a);
int sl_api_set_identity(struct sl_api *a, const struct sl_ident *id, struct sl_error *err);

#endif
