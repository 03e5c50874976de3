/*
 * test_ws.c - the WebSocket pieces (src/util/ws.h): SHA-1, the
 * handshake's keys, the frame parser's one meaning or refusal, frame
 * headers, masking, close payloads, UTF-8 and header tokens.
 */
#include "../tap.h"

#include <errno.h>
#include <stdlib.h>

#include "../../src/util/ws.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_sha1(void)
{
    uint8_t d[20];
    char h[41], *big = malloc(1000000);

    sl_ws_sha1("abc", 3, d);
    hex(d, 20, h);
    is_str(h, "a9993e364706816aba3e25717850c26c9cd0d89d", "SHA-1 of abc is FIPS 180's");
    sl_ws_sha1("", 0, d);
    hex(d, 20, h);
    is_str(h, "da39a3ee5e6b4b0d3255bfef95601890afd80709", "SHA-1 of nothing");
    sl_ws_sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
    hex(d, 20, h);
    is_str(h, "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
           "SHA-1 of 56 bytes (the padding spills into a second block)");
    memset(big, 'a', 1000000);
    sl_ws_sha1(big, 1000000, d);
    hex(d, 20, h);
    is_str(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "SHA-1 of a million a's");
    free(big);
}

static void test_keys(void)
{
    char acc[SL_WS_ACCEPT_LEN + 1], key[SL_WS_KEY_LEN + 1];
    uint8_t nonce[16] = {0};

    is_int(sl_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", acc), 0, "RFC 6455's sample key is valid");
    is_str(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "and its accept is RFC 6455's");
    is_int(sl_ws_accept("dGhlIHNhbXBsZSBub25jZQ=", acc), -EINVAL, "a key of 23 characters is refused");
    is_str(acc, "", "... leaving the accept empty");
    ok(!sl_ws_key_valid("dGhlIHNhbXBsZSBub25jZR=="), "a key whose last bits are not zero is refused");
    ok(!sl_ws_key_valid("dGhlIHNhbXBsZSBub25j*Q=="), "a key with a character outside base64");
    ok(!sl_ws_key_valid("dGhlIHNhbXBsZSBub25jZQAA"), "a key without its padding");
    ok(!sl_ws_key_valid(NULL), "no key");
    for (int i = 0; i < 16; i++)
        nonce[i] = (uint8_t)(i * 17);
    sl_ws_key_make(nonce, key);
    ok(sl_ws_key_valid(key), "a key made from 16 bytes is valid (%s)", key);
}

static void test_frames(void)
{
    struct sl_ws_frame f;
    struct sl_ws_refusal why;
    uint8_t b[32], mask[4] = {1, 2, 3, 4}, p[5] = {'h', 'e', 'l', 'l', 'o'};
    size_t n;

    n = sl_ws_frame_head(b, SL_WS_BINARY, true, 5, mask);
    is_int(n, 6, "a masked header of a short frame is 6 bytes");
    memcpy(b + n, p, 5);
    sl_ws_mask(b + n, 5, mask, 0);
    is_int(sl_ws_frame_parse(b, n + 5, true, 100, &f, &why), 1, "a client frame parses");
    ok(f.fin && f.opcode == SL_WS_BINARY && f.payload_len == 5 && f.head_len == 6,
       "with its fin, opcode, length and header length");
    sl_ws_mask(b + n, 5, f.mask, 0);
    ok(memcmp(b + n, "hello", 5) == 0, "unmasking gives the payload back");
    is_int(sl_ws_frame_parse(b, 1, true, 100, &f, &why), 0, "one byte: more is needed");
    is_int(sl_ws_frame_parse(b, 5, true, 100, &f, &why), 0, "a header without its mask: more");
    is_int(sl_ws_frame_parse(b, n + 5, false, 100, &f, &why), -1,
           "a masked frame to a client is refused");
    is_int(why.close_code, SL_WS_CLOSE_PROTOCOL, "... with 1002");
    n = sl_ws_frame_head(b, SL_WS_BINARY, true, 5, NULL);
    is_int(sl_ws_frame_parse(b, n, true, 100, &f, &why), -1,
           "an unmasked frame to a server is refused");
    is_int(sl_ws_frame_parse(b, n, true, 4, &f, &why), -1, "a masked-ness fault comes first");
    n = sl_ws_frame_head(b, SL_WS_BINARY, true, 200, mask);
    is_int(n, 8, "a 200-byte frame has the 16-bit length");
    is_int(sl_ws_frame_parse(b, n, true, 100, &f, &why), -1, "a frame over the cap is refused");
    is_int(why.close_code, SL_WS_CLOSE_TOO_BIG, "... with 1009");
    is_int(sl_ws_frame_parse(b, n, true, 200, &f, &why), 1, "at the cap it is not");
    n = sl_ws_frame_head(b, SL_WS_BINARY, true, 70000, NULL);
    is_int(n, 10, "a 70000-byte frame has the 64-bit length");
    is_int(sl_ws_frame_parse(b, n, false, 100000, &f, &why), 1, "and parses");
    is_int(f.payload_len, 70000, "to its length");
    /* lengths not in their shortest form */
    b[0] = 0x82, b[1] = 126, b[2] = 0, b[3] = 100;
    is_int(sl_ws_frame_parse(b, 4, false, 1000, &f, &why), -1,
           "100 in the 16-bit form is refused (one meaning)");
    b[1] = 127;
    memset(b + 2, 0, 8);
    b[7] = 1;
    is_int(sl_ws_frame_parse(b, 10, false, 1 << 20, &f, &why), 1,
           "65536 in the 64-bit form passes (it needs that form)");
    b[7] = 0, b[9] = 200;
    is_int(sl_ws_frame_parse(b, 10, false, 1 << 20, &f, &why), -1,
           "200 in the 64-bit form is refused");
    b[2] = 0x80;
    is_int(sl_ws_frame_parse(b, 10, false, UINT64_MAX, &f, &why), -1,
           "a 64-bit length with its top bit set is refused");
    /* reserved bits, opcodes, control frames */
    b[0] = 0xC2, b[1] = 0;
    is_int(sl_ws_frame_parse(b, 2, false, 10, &f, &why), -1, "RSV1 set is refused");
    b[0] = 0x83;
    is_int(sl_ws_frame_parse(b, 2, false, 10, &f, &why), -1, "opcode 3 is refused");
    b[0] = 0x0B;
    is_int(sl_ws_frame_parse(b, 2, false, 10, &f, &why), -1, "opcode 11 is refused");
    b[0] = 0x09;
    is_int(sl_ws_frame_parse(b, 2, false, 10, &f, &why), -1, "a fragmented ping is refused");
    b[0] = 0x89, b[1] = 126, b[2] = 0, b[3] = 126;
    is_int(sl_ws_frame_parse(b, 4, false, 1000, &f, &why), -1, "a ping over 125 bytes is refused");
    b[0] = 0x89, b[1] = 125;
    is_int(sl_ws_frame_parse(b, 2, false, 10, &f, &why), 1,
           "a ping of 125 bytes passes even over the data cap");
    b[0] = 0x00, b[1] = 3;
    is_int(sl_ws_frame_parse(b, 2, false, 10, &f, &why), 1, "a continuation frame parses");
    ok(!f.fin && f.opcode == SL_WS_CONT, "not final, continuation");
}

static void test_close_and_text(void)
{
    struct sl_ws_refusal why;
    uint8_t c[8] = {0x03, 0xE8, 'b', 'y', 'e'};

    is_int(sl_ws_close_parse(c, 0, &why), 1005, "an empty close is 1005 (no status)");
    is_int(sl_ws_close_parse(c, 1, &why), -1, "a close of one byte is refused");
    is_int(sl_ws_close_parse(c, 5, &why), 1000, "1000 with a reason");
    c[0] = 0x03, c[1] = 0xED; /* 1005 may not be sent */
    is_int(sl_ws_close_parse(c, 2, &why), -1, "1005 on the wire is refused");
    c[0] = 0x0F, c[1] = 0xA0; /* 4000 */
    is_int(sl_ws_close_parse(c, 2, &why), 4000, "a private code 4000 passes");
    c[0] = 0x03, c[1] = 0xE8, c[2] = 0xC0, c[3] = 0x80;
    is_int(sl_ws_close_parse(c, 4, &why), -1, "a reason that is not UTF-8 is refused");
    is_int(why.close_code, SL_WS_CLOSE_INVALID, "... with 1007");
    ok(sl_ws_utf8_valid((const uint8_t *)"h\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 10),
       "UTF-8 of 1 to 4 bytes is valid");
    ok(!sl_ws_utf8_valid((const uint8_t *)"\xE0\x80\x80", 3), "an overlong form is not");
    ok(!sl_ws_utf8_valid((const uint8_t *)"\xED\xA0\x80", 3), "a surrogate is not");
    ok(!sl_ws_utf8_valid((const uint8_t *)"\xF4\x90\x80\x80", 4), "beyond U+10FFFF is not");
    ok(!sl_ws_utf8_valid((const uint8_t *)"\xE2\x82", 2), "a cut sequence is not");
    ok(sl_ws_token_in("keep-alive, Upgrade", "upgrade"), "a token in a list, any case");
    ok(sl_ws_token_in("a,\tv1.attach.sluice ,b", "v1.attach.sluice"), "with tabs and spaces");
    ok(!sl_ws_token_in("upgrades", "upgrade"), "not a token's prefix");
    ok(!sl_ws_token_in(NULL, "upgrade"), "not in no list");
}

int main(void)
{
    test_sha1();
    test_keys();
    test_frames();
    test_close_and_text();
    return done_testing();
}
