/*
 * A direct C port of the report's §16 CSIM listing, used only as a same-run speed baseline for
 * `schedlab bench` (see compare.sh). Same model: 13 ScheduleQueues (RR', RR, FIFO, 1 ... 100, 1e6)
 * as sorted singly linked lists with double priorities, one shared server, Poisson arrivals,
 * service 0.5 + Exp(0.5), latency recorded when a message's last packet is taken.
 * Tuned the obvious ways: nodes from a free list, no CSIM processes (a two-event loop),
 * xoshiro256++ with inverse-transform exponentials.
 *
 * usage: listing TRAFFIC PACKETS   -> prints "packets seconds rate avlat(SF)"
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t s[4] = {0x9E3779B97F4A7C15ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull, 42};
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t next(void) {
    uint64_t r = rotl(s[0] + s[3], 23) + s[0], t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
}
static inline double unif(void) { return (next() >> 11) * 0x1.0p-53; }
static inline double expntl(double mean) { return -mean * log(1.0 - unif()); }

typedef struct Msg { double entry; int len, left; } Msg;
typedef struct Link { Msg m; double pri; struct Link *next; } Link;
static Link *pool;

static Link *alloc_link(void) {
    if (!pool) {
        Link *b = malloc(4096 * sizeof(Link));
        for (int i = 0; i < 4096; i++) { b[i].next = pool; pool = &b[i]; }
    }
    Link *l = pool; pool = l->next; return l;
}
static void free_link(Link *l) { l->next = pool; pool = l; }

typedef struct Q { double alpha; Link *head; long tick; double sum[21]; long n[21]; } Q;

static void insert(Q *q, Msg m) {
    double pr = (q->alpha <= 0.0) ? ((q->alpha < -1.5) ? 0.0 : (double)q->tick) : q->alpha * m.len + q->tick;
    Link *sl = alloc_link(); sl->m = m; sl->pri = pr; sl->next = 0;
    if (!q->head) q->head = sl;
    else if (q->head->pri > pr) { sl->next = q->head; q->head = sl; }
    else {
        Link *h = q->head;
        while (h->next && h->next->pri <= pr) h = h->next;
        sl->next = h->next; h->next = sl;
    }
}

static void accept(Q *q, double now) {
    Link *h = q->head;
    q->tick++;
    h->m.left--;
    if (q->alpha > 0.0) h->pri -= q->alpha;
    if (h->m.left == 0) {
        q->sum[h->m.len] += now - h->m.entry; q->n[h->m.len]++;
        q->head = h->next; free_link(h);
    } else if (q->alpha < 0.0) {
        h->pri = q->tick; q->head = h->next;
        if (!q->head) { q->head = h; h->next = 0; }
        else { Link *t = q->head; while (t->next) t = t->next; t->next = h; h->next = 0; }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: listing TRAFFIC PACKETS\n"); return 2; }
    double traffic = atof(argv[1]); long target = atol(argv[2]);
    double alphas[13] = {-2, -1, 0, 1, 2, 3, 6, 10, 20, 30, 60, 100, 1e6};
    Q qs[13] = {0};
    for (int i = 0; i < 13; i++) qs[i].alpha = alphas[i];
    double gap = 4.7 * 100.0 / traffic, now = 0, next_arr = 0, srv_end = INFINITY;
    long in = 0, out = 0; int busy = 0;
    struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
    while (in < target) {
        if (next_arr <= srv_end) {
            now = next_arr;
            double u = unif(); int len = u < 0.9 ? 1 + (int)(u / 0.9 * 5) : 20;
            Msg m = {now, len, len};
            for (int i = 0; i < 13; i++) insert(&qs[i], m);
            in += len;
            if (!busy) { for (int i = 0; i < 13; i++) accept(&qs[i], now); out++; busy = 1; srv_end = now + 0.5 + expntl(0.5); }
            next_arr = now + expntl(gap);
        } else {
            now = srv_end;
            if (in > out) { for (int i = 0; i < 13; i++) accept(&qs[i], now); out++; srv_end = now + 0.5 + expntl(0.5); }
            else { busy = 0; srv_end = INFINITY; }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    double sum = 0; long n = 0;
    for (int l = 0; l <= 20; l++) { sum += qs[12].sum[l]; n += qs[12].n[l]; }
    printf("%ld %.3f %.0f %.2f\n", in, sec, in / sec, sum / n);
    return 0;
}
