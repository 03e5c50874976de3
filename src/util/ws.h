/*
 * ws.h - the WebSocket protocol (RFC 6455) as far as sluiced's attach
 * relay and the CLI need it: the opening handshake's keys and the framing.
 *
 * Pure: no I/O, no allocation, no state; the caller keeps its own buffers
 * and the state of a fragmented message. Thread-safe.
 *
 * The frame parser accepts one meaning or refuses: reserved bits set (no
 * extension is ever negotiated), an unknown opcode, a fragmented or long
 * control frame, a mask bit other than the side requires, a length not in
 * its shortest encoding or with the top bit of 64 set, and a payload over
 * the caller's cap are each refused with the close code the peer is to be
 * sent (1002 protocol error, 1009 message too big).
 */
#ifndef SL_WS_H
#define SL_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_WS_KEY_LEN 24          /* Sec-WebSocket-Key: base64 of 16 bytes */
#define SL_WS_ACCEPT_LEN 28       /* Sec-WebSocket-Accept: base64 of SHA-1 */
#define SL_WS_HEAD_MAX 14         /* the longest frame header */
#define SL_WS_CONTROL_MAX 125     /* payload of a control frame */

enum sl_ws_opcode {
    SL_WS_CONT = 0x0,
    SL_WS_TEXT = 0x1,
    SL_WS_BINARY = 0x2,
    SL_WS_CLOSE = 0x8,
    SL_WS_PING = 0x9,
    SL_WS_PONG = 0xA,
};

/* Close codes (RFC 6455 7.4.1) the relay and the CLI send. */
enum sl_ws_close {
    SL_WS_CLOSE_NORMAL = 1000,
    SL_WS_CLOSE_GOING_AWAY = 1001,
    SL_WS_CLOSE_PROTOCOL = 1002,
    SL_WS_CLOSE_UNSUPPORTED = 1003,
    SL_WS_CLOSE_INVALID = 1007,   /* a payload that breaks the protocol's
                                     rules (a bad resize message) */
    SL_WS_CLOSE_POLICY = 1008,
    SL_WS_CLOSE_TOO_BIG = 1009,
    SL_WS_CLOSE_INTERNAL = 1011,
};

/* One frame's header, as sl_ws_frame_parse found it. */
struct sl_ws_frame {
    bool fin;
    int opcode;                   /* enum sl_ws_opcode */
    bool masked;
    uint8_t mask[4];              /* when masked */
    size_t head_len;              /* bytes of the header: 2..14 */
    uint64_t payload_len;         /* bytes of payload after the header */
};

/* Why a frame was refused: the close code to send and a line of text. */
struct sl_ws_refusal {
    int close_code;               /* enum sl_ws_close */
    char text[96];
};

/* SHA-1 of data[0..len) into out (FIPS 180-4); only for the handshake,
 * which RFC 6455 fixes to it. */
void sl_ws_sha1(const void *data, size_t len, uint8_t out[20]);

/* Whether 'key' is a valid Sec-WebSocket-Key: exactly 24 characters of
 * padded base64 that decode to 16 bytes. */
bool sl_ws_key_valid(const char *key);

/* The Sec-WebSocket-Accept for a valid 'key' into out (28 characters and
 * a NUL): base64(SHA-1(key + the protocol's GUID)). Returns 0, or -EINVAL
 * for a key that is not valid (out is then ""). */
int sl_ws_accept(const char *key, char out[SL_WS_ACCEPT_LEN + 1]);

/* A Sec-WebSocket-Key from 16 bytes of 'nonce' into out (24 characters
 * and a NUL). */
void sl_ws_key_make(const uint8_t nonce[16], char out[SL_WS_KEY_LEN + 1]);

/* Parse the frame at buf[0..len). 'masked' is what the receiving side
 * requires (a server: true, every client frame is masked; a client:
 * false); 'max_payload' caps a data frame's payload. Returns 1 with *f
 * when the header is complete and valid (the payload may still be
 * coming: the whole frame is f->head_len + f->payload_len bytes), 0 when
 * the header needs more bytes, -1 with 'why' when the frame is refused
 * (the connection is then to be closed with why->close_code). */
int sl_ws_frame_parse(const uint8_t *buf, size_t len, bool masked, uint64_t max_payload,
                      struct sl_ws_frame *f, struct sl_ws_refusal *why);

/* XOR p[0..n) with 'mask', p[0] being byte 'offset' of its payload
 * (masking and unmasking are the same). */
void sl_ws_mask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset);

/* Write the header of a frame (FIN set when 'fin') carrying 'len' bytes
 * of 'opcode' into out, masked with 'mask' when it is not NULL (a client's
 * frame; the caller masks the payload with sl_ws_mask). Returns the
 * header's length (2..14). */
size_t sl_ws_frame_head(uint8_t out[SL_WS_HEAD_MAX], int opcode, bool fin, uint64_t len,
                        const uint8_t *mask);

/* Check a close frame's (unmasked) payload: empty, or a code the peer may
 * send (1000-1003, 1007-1011, 3000-4999) and UTF-8 text. Returns the code
 * (1005, "no status", for an empty payload), or -1 with 'why' filled. */
int sl_ws_close_parse(const uint8_t *p, size_t n, struct sl_ws_refusal *why);

/* Whether the comma-separated header value 'list' holds token 'tok'
 * (case-insensitively, spaces and tabs around items ignored): Connection:
 * keep-alive, Upgrade, Sec-WebSocket-Protocol. */
bool sl_ws_token_in(const char *list, const char *tok);

/* Whether s[0..n) is valid UTF-8 (no overlong forms, no surrogates, at
 * most U+10FFFF). */
bool sl_ws_utf8_valid(const uint8_t *s, size_t n);

#endif
