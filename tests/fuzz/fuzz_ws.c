/*
 * fuzz_ws.c - libFuzzer target for the WebSocket frame parser
 * (src/util/ws.c, sl_ws_frame_parse) as the attach relay meets it: the
 * input is what a client sends after its 101, read frame after frame
 * (masked, data frames capped at 32 KiB), with each close payload checked
 * as the relay checks it; its first 24 bytes are also tried as a
 * Sec-WebSocket-Key.
 *
 * Beyond the sanitizers, the contract is checked and a breach aborts: an
 * accepted header is 2 to 14 bytes and written again by sl_ws_frame_head
 * it is the same bytes (one meaning); a control frame is final and at
 * most 125 bytes, a data frame within the cap; a refusal carries a close
 * code of 1002, 1007 or 1009 and a printable reason; a close payload is
 * 1005 or a code a peer may send; a valid key has a 28-character accept.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/util/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP 32768

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_ws: %s\n", what);
    abort();
}

static void check_refusal(const struct sl_ws_refusal *why)
{
    if (why->close_code != SL_WS_CLOSE_PROTOCOL && why->close_code != SL_WS_CLOSE_INVALID &&
        why->close_code != SL_WS_CLOSE_TOO_BIG)
        fail("a refusal with another close code");
    if (!why->text[0])
        fail("a refusal without a reason");
    for (const char *t = why->text; *t; t++)
        if ((unsigned char)*t < 0x20 || (unsigned char)*t >= 0x7f)
            fail("a reason that is not printable ASCII");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1), again[SL_WS_HEAD_MAX];
    size_t off = 0;

    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (size >= SL_WS_KEY_LEN) {
        char key[SL_WS_KEY_LEN + 1], acc[SL_WS_ACCEPT_LEN + 1];
        memcpy(key, data, SL_WS_KEY_LEN);
        key[SL_WS_KEY_LEN] = '\0';
        if (sl_ws_accept(key, acc) == 0 ? strlen(acc) != SL_WS_ACCEPT_LEN : acc[0] != '\0')
            fail("an accept of the wrong length");
    }
    for (;;) {
        struct sl_ws_frame f;
        struct sl_ws_refusal why = {0, ""};
        int rc = sl_ws_frame_parse(buf + off, size - off, true, CAP, &f, &why);
        if (rc < 0) {
            check_refusal(&why);
            break;
        }
        if (rc == 0)
            break;
        if (f.head_len < 2 || f.head_len > SL_WS_HEAD_MAX || !f.masked)
            fail("a header of a bad length, or unmasked");
        if (sl_ws_frame_head(again, f.opcode, f.fin, f.payload_len, f.mask) != f.head_len ||
            memcmp(again, buf + off, f.head_len) != 0)
            fail("a header that written again is other bytes");
        if (f.opcode >= SL_WS_CLOSE && (!f.fin || f.payload_len > SL_WS_CONTROL_MAX))
            fail("a fragmented or long control frame accepted");
        if (f.opcode < SL_WS_CLOSE && f.payload_len > CAP)
            fail("a data frame over the cap accepted");
        if (size - off - f.head_len < f.payload_len)
            break;
        sl_ws_mask(buf + off + f.head_len, (size_t)f.payload_len, f.mask, 0);
        if (f.opcode == SL_WS_CLOSE) {
            int code = sl_ws_close_parse(buf + off + f.head_len, (size_t)f.payload_len, &why);
            if (code < 0)
                check_refusal(&why);
            else if (code != 1005 && !((code >= 1000 && code <= 1003) ||
                                       (code >= 1007 && code <= 1011) ||
                                       (code >= 3000 && code <= 4999)))
                fail("a close code a peer may not send accepted");
        }
        off += f.head_len + (size_t)f.payload_len;
    }
    free(buf);
    return 0;
}
