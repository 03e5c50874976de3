/*
 * ws.c - WebSocket handshake keys and framing (ws.h). Pure functions.
 */
#include "ws.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* ---- SHA-1 ---------------------------------------------------------------- */

static uint32_t rol(uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    for (int i = 0; i < 80; i++) {
        uint32_t f, k, t;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void sl_ws_sha1(const void *data, size_t len, uint8_t out[20])
{
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    const uint8_t *p = data;
    uint8_t last[128];
    size_t full = len / 64 * 64, rest = len - full, n;
    uint64_t bits = (uint64_t)len * 8;

    for (size_t i = 0; i < full; i += 64)
        sha1_block(h, p + i);
    memset(last, 0, sizeof(last));
    if (rest)
        memcpy(last, p + full, rest);
    last[rest] = 0x80;
    n = rest + 1 + 8 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++)
        last[n - 1 - i] = (uint8_t)(bits >> (8 * i));
    for (size_t i = 0; i < n; i += 64)
        sha1_block(h, last + i);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}

/* ---- keys ----------------------------------------------------------------- */

/* Padded base64 of in[0..n) into out (4 * ceil(n / 3) characters and a
 * NUL). */
static void base64(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = '\0';
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

bool sl_ws_key_valid(const char *key)
{
    int last;

    if (!key || strlen(key) != SL_WS_KEY_LEN || key[22] != '=' || key[23] != '=')
        return false;
    for (int i = 0; i < 22; i++)
        if (b64_value(key[i]) < 0)
            return false;
    /* 16 bytes are 128 bits: the 22nd character carries 2 of them, and
     * its 4 low bits must be zero for the encoding to be the one. */
    last = b64_value(key[21]);
    return (last & 15) == 0;
}

int sl_ws_accept(const char *key, char out[SL_WS_ACCEPT_LEN + 1])
{
    char cat[SL_WS_KEY_LEN + sizeof(ws_guid)];
    uint8_t digest[20];

    out[0] = '\0';
    if (!sl_ws_key_valid(key))
        return -EINVAL;
    memcpy(cat, key, SL_WS_KEY_LEN);
    memcpy(cat + SL_WS_KEY_LEN, ws_guid, sizeof(ws_guid) - 1);
    sl_ws_sha1(cat, SL_WS_KEY_LEN + sizeof(ws_guid) - 1, digest);
    base64(digest, sizeof(digest), out);
    return 0;
}

void sl_ws_key_make(const uint8_t nonce[16], char out[SL_WS_KEY_LEN + 1])
{
    base64(nonce, 16, out);
}

/* ---- frames --------------------------------------------------------------- */

static int refuse(struct sl_ws_refusal *why, int code, const char *text)
{
    if (why) {
        why->close_code = code;
        snprintf(why->text, sizeof(why->text), "%s", text);
    }
    return -1;
}

int sl_ws_frame_parse(const uint8_t *buf, size_t len, bool masked, uint64_t max_payload,
                      struct sl_ws_frame *f, struct sl_ws_refusal *why)
{
    size_t need = 2;
    uint64_t plen;
    int op;

    if (len < 2)
        return 0;
    if (buf[0] & 0x70)
        return refuse(why, SL_WS_CLOSE_PROTOCOL, "reserved bits set (no extension was agreed)");
    op = buf[0] & 0x0F;
    if (op != SL_WS_CONT && op != SL_WS_TEXT && op != SL_WS_BINARY && op != SL_WS_CLOSE &&
        op != SL_WS_PING && op != SL_WS_PONG)
        return refuse(why, SL_WS_CLOSE_PROTOCOL, "unknown opcode");
    if (!!(buf[1] & 0x80) != masked)
        return refuse(why, SL_WS_CLOSE_PROTOCOL,
                      masked ? "a client frame must be masked"
                             : "a server frame must not be masked");
    plen = buf[1] & 0x7F;
    if (plen == 126)
        need += 2;
    else if (plen == 127)
        need += 8;
    if (masked)
        need += 4;
    if (len < need)
        return 0;
    if (plen == 126) {
        plen = (uint64_t)buf[2] << 8 | buf[3];
        if (plen < 126)
            return refuse(why, SL_WS_CLOSE_PROTOCOL, "a length not in its shortest form");
    } else if (plen == 127) {
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | buf[2 + i];
        if (plen >> 63)
            return refuse(why, SL_WS_CLOSE_PROTOCOL, "a length with its top bit set");
        if (plen <= 0xFFFF)
            return refuse(why, SL_WS_CLOSE_PROTOCOL, "a length not in its shortest form");
    }
    if (op >= SL_WS_CLOSE) {
        if (!(buf[0] & 0x80))
            return refuse(why, SL_WS_CLOSE_PROTOCOL, "a fragmented control frame");
        if (plen > SL_WS_CONTROL_MAX)
            return refuse(why, SL_WS_CLOSE_PROTOCOL, "a control frame over 125 bytes");
    } else if (plen > max_payload) {
        return refuse(why, SL_WS_CLOSE_TOO_BIG, "a frame over the size limit");
    }
    f->fin = (buf[0] & 0x80) != 0;
    f->opcode = op;
    f->masked = masked;
    memset(f->mask, 0, sizeof(f->mask));
    if (masked)
        memcpy(f->mask, buf + need - 4, 4);
    f->head_len = need;
    f->payload_len = plen;
    return 1;
}

void sl_ws_mask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= mask[(offset + i) & 3];
}

size_t sl_ws_frame_head(uint8_t out[SL_WS_HEAD_MAX], int opcode, bool fin, uint64_t len,
                        const uint8_t *mask)
{
    size_t n = 2;

    out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0F));
    if (len < 126) {
        out[1] = (uint8_t)len;
    } else if (len <= 0xFFFF) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        n = 4;
    } else {
        out[1] = 127;
        for (int i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
        n = 10;
    }
    if (mask) {
        out[1] |= 0x80;
        memcpy(out + n, mask, 4);
        n += 4;
    }
    return n;
}

bool sl_ws_utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        uint32_t cp;
        int more;
        uint8_t c = s[i++];
        if (c < 0x80)
            continue;
        if (c >= 0xC2 && c <= 0xDF) {
            cp = c & 0x1F;
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            cp = c & 0x0F;
            more = 2;
        } else if (c >= 0xF0 && c <= 0xF4) {
            cp = c & 0x07;
            more = 3;
        } else {
            return false;
        }
        if (n - i < (size_t)more)
            return false;
        for (int k = 0; k < more; k++) {
            if ((s[i] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i++] & 0x3F);
        }
        if ((more == 2 && cp < 0x800) || (more == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
    }
    return true;
}

int sl_ws_close_parse(const uint8_t *p, size_t n, struct sl_ws_refusal *why)
{
    int code;

    if (n == 0)
        return 1005;
    if (n == 1)
        return refuse(why, SL_WS_CLOSE_PROTOCOL, "a close frame of one byte");
    code = p[0] << 8 | p[1];
    if (!((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
          (code >= 3000 && code <= 4999)))
        return refuse(why, SL_WS_CLOSE_PROTOCOL, "a close code a peer may not send");
    if (!sl_ws_utf8_valid(p + 2, n - 2))
        return refuse(why, SL_WS_CLOSE_INVALID, "a close reason that is not UTF-8");
    return code;
}

bool sl_ws_token_in(const char *list, const char *tok)
{
    size_t n = strlen(tok);

    for (const char *p = list; p && *p;) {
        size_t len;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        len = strcspn(p, ", \t");
        if (len == n && strncasecmp(p, tok, n) == 0)
            return true;
        p += len;
        while (*p && *p != ',')
            p++;
    }
    return false;
}
