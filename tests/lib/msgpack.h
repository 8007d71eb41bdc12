/* SPDX-License-Identifier: MIT */
/*
 * A small MessagePack reader for test programs: enough to walk a document
 * (AMD code objects' metadata notes) and pick out maps, arrays, strings
 * and integers, skipping every other type. Input is untrusted: every read
 * is bounds-checked and returns -1 when the document is cut short or
 * nests deeper than 16.
 */
#ifndef GPUBUF_TEST_MSGPACK_H
#define GPUBUF_TEST_MSGPACK_H

#include <stdint.h>
#include <string.h>

enum { T_MP_INT, T_MP_STR, T_MP_ARRAY, T_MP_MAP, T_MP_OTHER };

struct t_mp {
	const unsigned char *p, *end;
};

struct t_mpv {
	int kind;
	/* An integer (negative ones as two's complement), a string's length
	 * or a container's element count (pairs for a map). */
	uint64_t n;
	const char *s;		/* string bytes, not NUL-terminated */
};

static uint64_t t_be(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* Take n bytes; NULL when the note is shorter. */
static const unsigned char *t_mp_take(struct t_mp *m, uint64_t n)
{
	const unsigned char *p = m->p;

	if ((uint64_t)(m->end - m->p) < n)
		return NULL;
	m->p += n;
	return p;
}

/* One value's header (and a scalar's or a string's bytes); -1 if cut off. */
static int t_mp_next(struct t_mp *m, struct t_mpv *v)
{
	static const unsigned char width[4] = { 1, 2, 4, 8 };
	const unsigned char *p = t_mp_take(m, 1), *q;
	unsigned int c, w;

	if (!p)
		return -1;
	c = *p;
	*v = (struct t_mpv){ .kind = T_MP_OTHER };
	if (c <= 0x7f || c >= 0xe0) {		/* fixint */
		v->kind = T_MP_INT;
		v->n = (uint64_t)(int64_t)(int8_t)c;
		return 0;
	}
	if (c <= 0x8f || (c >= 0x90 && c <= 0x9f)) {	/* fixmap, fixarray */
		v->kind = c <= 0x8f ? T_MP_MAP : T_MP_ARRAY;
		v->n = c & 0x0f;
		return 0;
	}
	if (c <= 0xbf || (c >= 0xd9 && c <= 0xdb)) {	/* strings */
		if (c <= 0xbf) {
			v->n = c & 0x1f;
		} else {
			w = width[c - 0xd9];
			if (!(q = t_mp_take(m, w)))
				return -1;
			v->n = t_be(q, (int)w);
		}
		v->kind = T_MP_STR;
		v->s = (const char *)t_mp_take(m, v->n);
		return v->s ? 0 : -1;
	}
	if (c >= 0xcc && c <= 0xd3) {		/* uint8..64, int8..64 */
		w = width[(c - 0xcc) % 4];
		if (!(q = t_mp_take(m, w)))
			return -1;
		v->kind = T_MP_INT;
		v->n = t_be(q, (int)w);
		/* int8..int64: sign-extend from w bytes. */
		if (c >= 0xd0 && w < 8 && v->n >> (8 * w - 1))
			v->n |= ~0ull << (8 * w);
		return 0;
	}
	if (c >= 0xdc) {			/* array16/32, map16/32 */
		w = c & 1 ? 4 : 2;
		if (!(q = t_mp_take(m, w)))
			return -1;
		v->kind = c <= 0xdd ? T_MP_ARRAY : T_MP_MAP;
		v->n = t_be(q, (int)w);
		return 0;
	}
	switch (c) {
	case 0xc0: case 0xc2: case 0xc3:	/* nil, false, true */
		return 0;
	case 0xc4: case 0xc5: case 0xc6:	/* bin8/16/32 */
		w = width[c - 0xc4];
		return (q = t_mp_take(m, w)) && t_mp_take(m, t_be(q, (int)w)) ?
		       0 : -1;
	case 0xc7: case 0xc8: case 0xc9:	/* ext8/16/32 */
		w = width[c - 0xc7];
		return (q = t_mp_take(m, w)) &&
		       t_mp_take(m, t_be(q, (int)w) + 1) ? 0 : -1;
	case 0xca: case 0xcb:			/* float32/64 */
		return t_mp_take(m, c == 0xca ? 4 : 8) ? 0 : -1;
	case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: /* fixext */
		return t_mp_take(m, 1 + (1u << (c - 0xd4))) ? 0 : -1;
	}
	return -1;				/* 0xc1: never used */
}

/* Skip one whole value, containers included. */
static int t_mp_skip(struct t_mp *m, int depth)
{
	struct t_mpv v;

	if (depth > 16 || t_mp_next(m, &v))
		return -1;
	if (v.kind == T_MP_ARRAY || v.kind == T_MP_MAP)
		for (uint64_t i = 0; i < v.n * (v.kind == T_MP_MAP ? 2 : 1); i++)
			if (t_mp_skip(m, depth + 1))
				return -1;
	return 0;
}

/* The items of a container whose header t_mp_next() just read. */
static int t_mp_skip_items(struct t_mp *m, const struct t_mpv *v)
{
	if (v->kind != T_MP_ARRAY && v->kind != T_MP_MAP)
		return 0;
	for (uint64_t i = 0; i < v->n * (v->kind == T_MP_MAP ? 2 : 1); i++)
		if (t_mp_skip(m, 1))
			return -1;
	return 0;
}

static int t_mp_is(const struct t_mpv *v, const char *s)
{
	return v->kind == T_MP_STR && v->n == strlen(s) &&
	       !memcmp(v->s, s, v->n);
}

#endif /* GPUBUF_TEST_MSGPACK_H */
