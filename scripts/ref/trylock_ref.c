/*
 * trylock_ref.c - the plain C loops that `schedlab trylock` must agree with.
 *
 * Written for schedlab from the trylock seed's description (no original source survives); it
 * does exactly the work of a C benchmark and nothing more, so it is the yardstick of
 * scripts/trylock-vs-c.sh:
 *   test A (default): the main thread holds a POSIX semaphore (value 0); each worker calls
 *     sem_trywait in a tight loop, counting busy/free outcomes; rate = tries / elapsed time.
 *   test B (-F): the semaphore starts free; each worker times every sem_trywait (and every
 *     sem_post after a successful try) with clock_gettime(CLOCK_MONOTONIC), keeps sums and
 *     counts, and stores busy samples in a ring of RING entries (touched before the start).
 * Worker i is pinned to the i-th CPU the process may use; workers start together (barrier).
 *
 * Build: cc -O2 -fno-plt -falign-loops=64 -pthread -o trylock_ref trylock_ref.c
 * These flags make this the fastest version of the same plain C loop (the strongest yardstick, not
 * a convenient one), measured on a 3 ns busy try:
 *   -fno-plt: calls into libc go straight through the GOT, as Rust emits them, instead of through
 *     a PLT stub whose extra jump costs ~0.3 ns (10%); the lock pointer is a local, so it stays in
 *     a register across the calls instead of being reloaded from a global;
 *   -falign-loops=64: the placement of the 6-instruction loop alone moves it by one cycle (3.13 ns
 *     when it straddles a fetch block, 2.82 ns aligned); aligned, it is the faster of the two.
 * Usage: trylock_ref [-n THREADS] [-t MILLIONS] [-F] [-r RING]
 * Output: one line per worker and a total line, as key=value pairs (ns, ops/s); cpu_ns_per_try
 * divides the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) by its tries, which preemption on a
 * loaded machine does not inflate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static sem_t *lock;
static pthread_barrier_t start;
static uint64_t ops;
static int free_test;
static size_t ring_cap = 1u << 20;
static int cpus[1024];
static int ncpus;

struct result {
    double duration_s, cpu_s, rate;
    uint64_t busy, free, post;
    uint64_t busy_sum, free_sum, post_sum;
} __attribute__((aligned(64)));

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct arg {
    int index;
    struct result r;
};

static void *worker(void *p)
{
    struct arg *a = p;
    struct result *r = &a->r;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[a->index % ncpus], &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "trylock_ref: pinning thread %d failed\n", a->index);
        exit(1);
    }
    uint32_t *ring = NULL;
    size_t next = 0;
    if (free_test && ring_cap) {
        ring = malloc(ring_cap * sizeof *ring);
        if (!ring) {
            perror("malloc");
            exit(1);
        }
        memset(ring, 0, ring_cap * sizeof *ring); /* no page faults while measuring */
    }
    pthread_barrier_wait(&start);
    uint64_t c_start = cpu_ns();
    uint64_t t_start = now_ns();
    if (!free_test) {
        uint64_t busy = 0, nfree = 0;
        sem_t *const l = lock; /* a local: kept in a register across the calls */
        for (uint64_t i = 0; i < ops; i++) {
            if (sem_trywait(l) == 0) {
                nfree++;
                sem_post(l);
            } else {
                busy++;
            }
        }
        r->busy = busy;
        r->free = nfree;
    } else {
        sem_t *const l = lock;
        for (uint64_t i = 0; i < ops; i++) {
            uint64_t t0 = now_ns();
            int rc = sem_trywait(l);
            uint64_t t1 = now_ns();
            if (rc == 0) {
                r->free++;
                r->free_sum += t1 - t0;
                uint64_t t2 = now_ns();
                sem_post(l);
                uint64_t t3 = now_ns();
                r->post++;
                r->post_sum += t3 - t2;
            } else {
                r->busy++;
                r->busy_sum += t1 - t0;
                if (ring) {
                    ring[next] = (uint32_t)(t1 - t0);
                    if (++next == ring_cap)
                        next = 0;
                }
            }
        }
    }
    uint64_t dt = now_ns() - t_start;
    r->cpu_s = (cpu_ns() - c_start) / 1e9;
    r->duration_s = dt / 1e9;
    r->rate = ops * 1e9 / (double)(dt ? dt : 1);
    if (ring)
        fprintf(stderr, "# thread %d ring[0]=%u\n", a->index, ring[0]); /* keep the stores */
    free(ring);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = 2, opt;
    double millions = 10;
    while ((opt = getopt(argc, argv, "n:t:Fr:")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 't': millions = atof(optarg); break;
        case 'F': free_test = 1; break;
        case 'r': ring_cap = strtoul(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: %s [-n THREADS] [-t MILLIONS] [-F] [-r RING]\n", argv[0]);
            return 2;
        }
    }
    if (n < 1 || millions <= 0) {
        fprintf(stderr, "trylock_ref: -n must be >= 1 and -t > 0\n");
        return 2;
    }
    ops = (uint64_t)(millions * 1e6 + 0.5);
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int c = 0; c < CPU_SETSIZE && ncpus < 1024; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[ncpus++] = c;
    if (posix_memalign((void **)&lock, 64, 64) != 0)
        return 1;
    sem_init(lock, 0, 1);
    if (!free_test && sem_trywait(lock) != 0) {
        fprintf(stderr, "trylock_ref: could not take the fresh semaphore\n");
        return 1;
    }
    pthread_barrier_init(&start, NULL, n);
    pthread_t *t = calloc(n, sizeof *t);
    struct arg *args = NULL;
    if (posix_memalign((void **)&args, 64, n * sizeof *args) != 0)
        return 1;
    memset(args, 0, n * sizeof *args);
    for (int i = 0; i < n; i++) {
        args[i].index = i;
        pthread_create(&t[i], NULL, worker, &args[i]);
    }
    uint64_t nb = 0, nf = 0, np = 0, sb = 0, sf = 0, sp = 0;
    double rate = 0, cpu_per_try = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        struct result *r = &args[i].r;
        printf("thread=%d busy_samples=%llu free_samples=%llu rate_ops_per_s=%.6e busy_avg_ns=%.3f free_avg_ns=%.3f post_avg_ns=%.3f duration_s=%.6f cpu_s=%.6f cpu_ns_per_try=%.4f\n",
               i, (unsigned long long)r->busy, (unsigned long long)r->free, r->rate,
               r->busy ? (double)r->busy_sum / r->busy : 0.0, r->free ? (double)r->free_sum / r->free : 0.0,
               r->post ? (double)r->post_sum / r->post : 0.0, r->duration_s, r->cpu_s, r->cpu_s * 1e9 / (double)ops);
        cpu_per_try += r->cpu_s * 1e9 / (double)ops / n;
        nb += r->busy; nf += r->free; np += r->post;
        sb += r->busy_sum; sf += r->free_sum; sp += r->post_sum;
        rate += r->rate;
    }
    printf("total test=%s threads=%d rate_ops_per_s=%.6e per_thread_ns_per_try=%.4f cpu_ns_per_try=%.4f busy_avg_ns=%.3f free_avg_ns=%.3f post_avg_ns=%.3f\n",
           free_test ? "B" : "A", n, rate, rate > 0 ? 1e9 / (rate / n) : 0.0, cpu_per_try, nb ? (double)sb / nb : 0.0,
           nf ? (double)sf / nf : 0.0, np ? (double)sp / np : 0.0);
    return 0;
}
