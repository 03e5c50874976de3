/*
 * client.h - libsluice: the HTTP client of the sluiced API
 * (docs/api-contract.md).
 *
 * A small HTTP/1.1 client over TCP sockets, with TLS (OpenSSL) for https://
 * servers: the certificate chain is verified against a CA file or the
 * system's store and must name the server's host or address, unless the
 * caller turns verification off (sl_client_set_tls). One struct sl_client keeps one connection
 * alive between requests; a connection the server has closed is noticed
 * before reuse and replaced, and a request is never sent twice once any
 * byte of it was written. Every request has a connect timeout of
 * SL_CLIENT_CONNECT_TIMEOUT_MS and a total timeout of SL_CLIENT_TIMEOUT_MS;
 * answers larger than SL_CLIENT_MAX_BODY, or whose headers pass 64 KiB, are
 * refused. Writes use MSG_NOSIGNAL: a closed connection never raises
 * SIGPIPE.
 *
 * Thread-safety: a client is used by one thread at a time. Different
 * clients may be used from different threads; there is no global state.
 */
#ifndef SL_CLIENT_H
#define SL_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Limits of every request. */
#define SL_CLIENT_CONNECT_TIMEOUT_MS 5000               /* ms */
#define SL_CLIENT_TIMEOUT_MS         60000              /* ms, whole request */
#define SL_CLIENT_MAX_BODY           ((size_t)64 << 20) /* bytes of an answer */
#define SL_CLIENT_MAX_TOKEN          4096               /* bytes */
#define SL_CLIENT_MAX_URL            8192 /* bytes, server + path */

struct sl_client;

/* What went wrong, from the server's error object or from the transport. */
struct sl_api_error {
    char code[32];     /* "invalid", "not_found", ...; "" for transport */
    char field[96];    /* field at fault, "" when none */
    char message[256]; /* one line, control characters replaced */
};

/* One answer. Filled by sl_client_request; release with sl_response_fini. */
struct sl_response {
    long status;               /* HTTP status; 0 when no answer came */
    char *body;                /* owned; len bytes plus a NUL; NULL if none */
    size_t len;                /* bytes in body (logs may hold NULs) */
    int64_t log_offset;        /* X-Sluice-Log-Offset, -1 when absent */
    int log_attempts;          /* X-Sluice-Log-Attempts, -1 when absent */
    char job_state[32];        /* X-Sluice-Job-State, "" when absent */
    char content_type[128];    /* Content-Type, "" when absent */
    char leader[256];          /* Sluice-Leader (a follower's answer: where
                                  the leader serves), "" when absent */
    struct sl_api_error error; /* set when status >= 400 or on -errno */
};

/* Create a client for 'server' ("http://host[:port]", port 80 by default;
 * host is a name, an IPv4 address or [IPv6]; a trailing slash is dropped; a
 * path after it prefixes every request path; "https://host[:port]", port
 * 443 by default, speaks TLS) that sends 'token' (may be NULL or "": no
 * Authorization header) as a bearer token. The token must be printable
 * ASCII without spaces, at most SL_CLIENT_MAX_TOKEN bytes. Returns a new
 * client (free with sl_client_destroy) or NULL with errno set: EINVAL for
 * a bad URL or token, ENOMEM. */
struct sl_client *sl_client_create(const char *server, const char *token);

/* TLS settings of a client, used by its https:// connections. */
struct sl_client_tls {
    const char *ca_file;   /* PEM CA certificates to verify the server
                              against; NULL = the system's store */
    const char *cert_file; /* PEM client certificate (and chain); NULL = none */
    const char *key_file;  /* its PEM private key; with cert_file */
    bool insecure;         /* do not verify the server at all */
};

/* Use 't' (strings copied) from the next connection on; the files are
 * read then, and a file that does not load fails that request with
 * -EINVAL and a message naming it. Returns 0 or -ENOMEM (client
 * unchanged). */
int sl_client_set_tls(struct sl_client *c, const struct sl_client_tls *t);

/* Whether the client's server is an https:// URL. */
bool sl_client_https(const struct sl_client *c);

/* Frees the client and closes its connection; accepts NULL; keeps errno. */
void sl_client_destroy(struct sl_client *c);

/* The server URL the client talks to, without a trailing slash. */
const char *sl_client_server(const struct sl_client *c);

/* Send 'method' ("GET", "POST", "DELETE", ...) to 'path' (starts with '/',
 * query string already escaped) with 'len' bytes of 'body' (may be NULL
 * when len is 0) of type 'content_type' (NULL: no Content-Type header,
 * allowed only without a body: the server answers a body without a type
 * 415, so the call refuses it with -EINVAL before sending).
 * '*resp' is initialised by the call, whatever it held before (so release
 * a previous answer first).
 *
 * Returns 0 when an answer came, whatever its status: resp->status, body,
 * headers are set and, for status >= 400, resp->error holds the server's
 * error object (or a text made from the status when the body is not one).
 * Returns a negated errno when no complete answer came: -ECONNREFUSED,
 * -ETIMEDOUT, -EHOSTUNREACH, -ECONNRESET (connection lost or closed
 * before the whole answer came; the request is not sent again), -EFBIG
 * (answer over SL_CLIENT_MAX_BODY), -ENOMEM, -EINVAL (bad path, a TLS
 * file that does not load), -EPROTO (the TLS handshake failed: the
 * server's certificate did not verify, or no common protocol), -EIO
 * (other, e.g. a malformed answer); resp->error.message then says
 * what happened and resp->body is NULL. Release resp with sl_response_fini
 * in every case. */
int sl_client_request(struct sl_client *c, const char *method, const char *path,
                      const char *content_type, const char *body, size_t len,
                      struct sl_response *resp);

/* As sl_client_request, with a JSON body ('body' may be NULL: no body)
 * sent as application/json, and a 2xx answer decoded into '*out' (a new
 * reference, caller decrefs; NULL for an empty body). Returns 0, a negated
 * errno from the transport, or -EPROTO when a 2xx body is not JSON
 * (resp->error.message says so). Non-2xx answers return 0 with *out NULL:
 * look at resp->status. */
int sl_client_json(struct sl_client *c, const char *method, const char *path,
                   const json_t *body, json_t **out, struct sl_response *resp);

/* A connection that switched protocols (sl_client_upgrade): its socket,
 * non-blocking, and over https its TLS session. Used by one thread. */
struct sl_stream;

/* Open a WebSocket (RFC 6455) to 'path' offering subprotocol 'protocol',
 * over http:// or https:// (the TLS session verified as for any request),
 * on a connection of its own (the kept-alive one is closed first). Returns
 * 0 when an answer came: on 101 with the handshake as asked, *st is the
 * connection (the caller's: sl_stream_close) and *early and *nearly the
 * bytes that came after the answer's head (a new buffer, the caller's to
 * free; NULL when none; over https more may wait decrypted in *st:
 * sl_stream_pending); on any other status *st is NULL and resp holds the
 * answer as sl_client_request leaves it. A 101 whose Sec-WebSocket-Accept
 * or -Protocol is not the one asked for is -EIO; otherwise the errors of
 * sl_client_request. */
int sl_client_upgrade(struct sl_client *c, const char *path, const char *protocol,
                      struct sl_stream **st, char **early, size_t *nearly,
                      struct sl_response *resp);

/* The stream's socket, to poll: for a read, for sl_stream_read_events;
 * for a write that returned -EAGAIN, for sl_stream_write_events. */
int sl_stream_fd(const struct sl_stream *st);
/* Read up to 'len' (> 0) bytes, never waiting: the count, 0 at the
 * peer's end (close_notify, or a close without one), -EAGAIN when nothing
 * can be read now, or -ECONNRESET (-EPROTO: a TLS failure). */
ssize_t sl_stream_read(struct sl_stream *st, void *buf, size_t len);
/* Write up to 'len' (> 0) bytes, never waiting: the count taken (it may
 * be short), -EAGAIN, or -EPIPE / -ECONNRESET (-EPROTO). After -EAGAIN
 * call again with the same bytes (they may have moved; more may follow
 * them). Never raises SIGPIPE. */
ssize_t sl_stream_write(struct sl_stream *st, const void *buf, size_t len);
/* The poll events the next read (write) waits for: POLLIN (POLLOUT), or
 * the other when the TLS record layer needs it (the last call said so). */
short sl_stream_read_events(const struct sl_stream *st);
short sl_stream_write_events(const struct sl_stream *st);
/* Whether decrypted bytes wait in the stream that no poll reports: read
 * them before waiting. Always false over http://. */
bool sl_stream_pending(const struct sl_stream *st);
/* Over https send close_notify (one try, never waiting), then free the
 * session and close the socket. NULL-safe; preserves errno. */
void sl_stream_close(struct sl_stream *st);

/* Read one answer to a 'method' request from the 'len' bytes at 'data'
 * exactly as sl_client_request reads it from its connection: the bytes
 * come 'step' at a time (0: as many as the read buffer takes), and their
 * end is the end of the stream. The answer parser without a socket, for
 * tests and the fuzz target (tests/fuzz/fuzz_http_response.c).
 *
 * Returns 0 when a whole answer is there: resp holds it as
 * sl_client_request fills it (for status >= 400 with the error decoded)
 * and *keep says whether a connection could carry another request after
 * it. Otherwise a negated errno as sl_client_request returns it: -EIO (a
 * malformed answer), -EFBIG, -ECONNRESET (the bytes end before the
 * answer), -ENOMEM, -EINVAL (bad arguments); resp->error.message says
 * what happened, resp->body is NULL and *keep false. Release resp with
 * sl_response_fini in every case. Thread-safe: no state. */
int sl_client_parse_answer(const char *data, size_t len, size_t step,
                           const char *method, struct sl_response *resp, bool *keep);

/* Percent-escape 's' for a path segment or query value. Returns a new
 * string (free with free()) or NULL on -ENOMEM. */
char *sl_client_escape(const char *s);

/* Release what the response owns; accepts NULL and a zeroed response;
 * leaves it zeroed. */
void sl_response_fini(struct sl_response *resp);

#endif
