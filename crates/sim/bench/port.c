/*
 * port.c: a fast C port of the report's section 16 model, the speed anchor for `schedlab sim`
 * (see compare.sh). Written for this repository to be at least as fast as a carefully tuned C
 * port: compare.sh measures it next to any other port given to it, in the same run.
 *
 * The model, as in the listing: 13 ScheduleQueues (RR', RR, FIFO, alpha = 1 2 3 6 10 20 30 60 100,
 * SF = 1e6) that each receive a copy of every message; one server takes one packet from every
 * non-empty queue at the same instant and then holds one shared service time 0.5 + Exp(mean 0.5);
 * Poisson arrivals with mean gap 100 * mean length / traffic; lengths 90% U{1..5}, 10% 20; a
 * message's latency is recorded when its last packet is taken; qlen sampled every 200 time units.
 * Priorities as the listing computes them: alpha <= 0: tick (RR' 0.0), alpha > 0: alpha*len + tick,
 * the head's priority lowered by alpha per packet; ties go to the older message. Ticks are 64-bit
 * (the listing's 32-bit int does not wrap before 2^31 packets).
 *
 * What makes it fast (all plain C, no tricks the model does not allow):
 *  - one queue structure per discipline, each served by its own loop (no per-queue switch):
 *    FIFO and RR one power-of-two ring, RR' two rings (never-served block, served cycle),
 *    alpha > 0 a binary heap on (priority, arrival number); a newcomer has the largest arrival
 *    number, so its sift-up compares priorities only;
 *  - xoshiro256++ and a 256-strip ziggurat for the exponentials (no log() on the hot path);
 *  - the server's loop runs service periods until the next arrival without re-testing events.
 *
 * usage: port [-t TRAFFIC] [-s SEED] [-P PACKETS]
 *   prints to stdout: "packets <P> seconds <S> rate <P/S> avlat <13 values, listing order>"
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXLEN 20
#define NALPHA 10

/* ------------------------------------------------------------------ random numbers */
typedef struct { uint64_t s[4]; } rng_t;
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t rng_next(rng_t *r) {
    uint64_t *s = r->s;
    uint64_t res = rotl(s[0] + s[3], 23) + s[0], t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return res;
}
static void rng_seed(rng_t *r, uint64_t x) {
    for (int i = 0; i < 4; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        r->s[i] = z ^ (z >> 31);
    }
}
static inline double u01(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Ziggurat for Exp(1): 256 strips of area V; x[1] = R, x[256] = 0; strip 0 = base + tail. */
static double zx[257], zf[257];
static void zig_init(void) {
    const double R = 7.69711747013105, V = 0.003949659822581557;
    zx[1] = R; zf[1] = exp(-R); zx[0] = V / zf[1]; zf[0] = 0.0;
    for (int i = 1; i < 255; i++) { zf[i + 1] = V / zx[i] + zf[i]; zx[i + 1] = -log(zf[i + 1]); }
    zx[256] = 0.0; zf[256] = 1.0;
}
static double zig_slow(rng_t *r, unsigned i, double x) {
    for (;;) {
        if (i == 0) return zx[1] - log(1.0 - u01(r)); /* tail: R + Exp(1) */
        if (zf[i] + u01(r) * (zf[i + 1] - zf[i]) < exp(-x)) return x;
        uint64_t b = rng_next(r);
        i = b & 255;
        x = (double)(b >> 11) * 0x1.0p-53 * zx[i];
        if (x < zx[i + 1]) return x;
    }
}
static inline double expo(rng_t *r) {
    uint64_t b = rng_next(r);
    unsigned i = b & 255;
    double x = (double)(b >> 11) * 0x1.0p-53 * zx[i];
    if (__builtin_expect(x < zx[i + 1], 1)) return x;
    return zig_slow(r, i, x);
}

/* ------------------------------------------------------------------ queues */
typedef struct { double entry; uint32_t len, left; } msg_t;             /* ring entry */
typedef struct { msg_t *a; uint32_t mask, head, n; } ring_t;
typedef struct { double pri; double entry; uint32_t seq, left, len, pad; } hent_t; /* heap entry */
typedef struct { hent_t *a; uint32_t n, cap; double alpha; } heap_t;

static void ring_init(ring_t *r) { r->mask = 1023; r->head = r->n = 0; r->a = malloc(sizeof(msg_t) * 1024); }
static void ring_grow(ring_t *r) {
    uint32_t cap = r->mask + 1;
    msg_t *a = malloc(sizeof(msg_t) * cap * 2);
    for (uint32_t i = 0; i < r->n; i++) a[i] = r->a[(r->head + i) & r->mask];
    free(r->a); r->a = a; r->mask = cap * 2 - 1; r->head = 0;
}
static inline void ring_push(ring_t *r, msg_t m) {
    if (__builtin_expect(r->n > r->mask, 0)) ring_grow(r);
    r->a[(r->head + r->n) & r->mask] = m; r->n++;
}

static inline int hless(const hent_t *x, const hent_t *y) {
    return x->pri < y->pri || (x->pri == y->pri && x->seq < y->seq);
}
static inline void heap_push(heap_t *h, hent_t e) {
    if (__builtin_expect(h->n == h->cap, 0)) { h->cap *= 2; h->a = realloc(h->a, sizeof(hent_t) * h->cap); }
    hent_t *a = h->a;
    uint32_t i = h->n++;
    while (i > 0) { /* the newcomer is the youngest: it passes a parent only on a strictly lower priority */
        uint32_t p = (i - 1) >> 1;
        if (!(e.pri < a[p].pri)) break;
        a[i] = a[p]; i = p;
    }
    a[i] = e;
}
static inline void heap_pop(heap_t *h) {
    hent_t *a = h->a;
    uint32_t n = --h->n, i = 0;
    if (n == 0) return;
    hent_t last = a[n];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && hless(&a[c + 1], &a[c])) c++;
        if (!hless(&a[c], &last)) break;
        a[i] = a[c]; i = c;
    }
    a[i] = last;
}

/* ------------------------------------------------------------------ statistics */
typedef struct { double sum[MAXLEN + 1]; uint64_t n[MAXLEN + 1]; } stat_t;
static inline void record(stat_t *s, uint32_t len, double lat) { s->sum[len] += lat; s->n[len]++; }
static double avlat(const stat_t *s) {
    double t = 0; uint64_t n = 0;
    for (int l = 0; l <= MAXLEN; l++) { t += s->sum[l]; n += s->n[l]; }
    return n ? t / n : 0.0;
}

/* One packet from every queue at `now` (all are non-empty: every queue holds the same work). */
static inline void serve(ring_t *fifo, ring_t *rr, ring_t *rrp_new, ring_t *rrp_cyc, heap_t *heaps, stat_t *st_fifo,
                         stat_t *st_rr, stat_t *st_rrp, stat_t *st_a, double now) {
    { msg_t *e = &fifo->a[fifo->head];
      if (--e->left == 0) { record(st_fifo, e->len, now - e->entry); fifo->head = (fifo->head + 1) & fifo->mask; fifo->n--; } }
    { msg_t c = rr->a[rr->head];
      rr->head = (rr->head + 1) & rr->mask; rr->n--;
      if (--c.left == 0) record(st_rr, c.len, now - c.entry); else ring_push(rr, c); }
    { ring_t *q = rrp_new->n ? rrp_new : rrp_cyc;
      msg_t c = q->a[q->head];
      q->head = (q->head + 1) & q->mask; q->n--;
      if (--c.left == 0) record(st_rrp, c.len, now - c.entry); else ring_push(rrp_cyc, c); }
    for (int j = 0; j < NALPHA; j++) {
        heap_t *h = &heaps[j];
        hent_t *e = &h->a[0];
        e->pri -= h->alpha;
        if (--e->left == 0) { record(&st_a[j], e->len, now - e->entry); heap_pop(h); }
    }
}

int main(int argc, char **argv) {
    double traffic = 95.0; uint64_t seed = 1; double pstop = 20e6;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t")) traffic = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-s")) seed = strtoull(argv[i + 1], 0, 10);
        else if (!strcmp(argv[i], "-P")) pstop = atof(argv[i + 1]);
        else { fprintf(stderr, "usage: port [-t TRAFFIC] [-s SEED] [-P PACKETS]\n"); return 2; }
    }
    if (!(traffic > 0 && traffic < 100) || !(pstop >= 1)) { fprintf(stderr, "port: bad -t or -P\n"); return 2; }
    static const double alphas[NALPHA] = { 1, 2, 3, 6, 10, 20, 30, 60, 100, 1e6 };
    zig_init();
    rng_t rarr, rlen, rsvc;
    rng_seed(&rarr, seed * 3 + 1); rng_seed(&rlen, seed * 3 + 2); rng_seed(&rsvc, seed * 3 + 3);

    ring_t fifo, rr, rrp_new, rrp_cyc;
    ring_init(&fifo); ring_init(&rr); ring_init(&rrp_new); ring_init(&rrp_cyc);
    heap_t heaps[NALPHA];
    for (int j = 0; j < NALPHA; j++) { heaps[j].cap = 1024; heaps[j].n = 0; heaps[j].alpha = alphas[j]; heaps[j].a = malloc(sizeof(hent_t) * 1024); }
    stat_t st_fifo = {0}, st_rr = {0}, st_rrp = {0}, st_a[NALPHA];
    memset(st_a, 0, sizeof st_a);

    const double mean_len = 0.9 * 3.0 + 0.1 * 20.0, gap = 100.0 * mean_len / traffic;
    const uint64_t target = (uint64_t)pstop;
    uint64_t pin = 0, pout = 0, seq = 0;
    double t_arr = 0.0, t_svc = 0.0, next_mon = 200.0, qsum = 0.0;
    uint64_t qn = 0;
    int busy = 0;

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (pin < target) {
        if (busy && t_svc < t_arr) { /* a service period ends before the next arrival (ties: arrival first) */
            double now = t_svc;
            while (next_mon <= now) { qsum += (double)(pin - pout); qn++; next_mon += 200.0; }
            if (pin == pout) { busy = 0; continue; }
            pout++;
            serve(&fifo, &rr, &rrp_new, &rrp_cyc, heaps, &st_fifo, &st_rr, &st_rrp, st_a, now);
            t_svc = now + 0.5 + 0.5 * expo(&rsvc);
            continue;
        }
        double now = t_arr;
        while (next_mon <= now) { qsum += (double)(pin - pout); qn++; next_mon += 200.0; }
        double u = u01(&rlen);
        uint32_t len = u < 0.9 ? 1 + (uint32_t)(u * (5.0 / 0.9)) : 20;
        if (len > 5 && u < 0.9) len = 5;
        double tick = (double)pout;
        msg_t m = { now, len, len };
        ring_push(&fifo, m);
        ring_push(&rr, m);
        ring_push(&rrp_new, m);
        for (int j = 0; j < NALPHA; j++)
            heap_push(&heaps[j], (hent_t){ heaps[j].alpha * len + tick, now, (uint32_t)seq, len, len, 0 });
        seq++;
        pin += len;
        t_arr = now + gap * expo(&rarr);
        if (!busy) { /* an arrival to an idle server is served at once */
            busy = 1;
            pout++;
            serve(&fifo, &rr, &rrp_new, &rrp_cyc, heaps, &st_fifo, &st_rr, &st_rrp, st_a, now);
            t_svc = now + 0.5 + 0.5 * expo(&rsvc);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    printf("packets %llu seconds %.4f rate %.0f qlen %.4f avlat", (unsigned long long)pin, secs, pin / secs, qn ? qsum / qn : 0.0);
    printf(" %.4f %.4f %.4f", avlat(&st_rrp), avlat(&st_rr), avlat(&st_fifo));
    for (int j = 0; j < NALPHA; j++) printf(" %.4f", avlat(&st_a[j]));
    printf("\n");
    return 0;
}
