#!/usr/bin/env python3
"""Peer programs for crates/sim/bench/peers.py: the report's single outlet in Ciw and SimPy.

One outlet, Poisson message arrivals, lengths 1-5 packets (90%, uniform) or 20 packets (10%), each
packet served in exactly one time unit (schedlab's `--service det`), so a message of length L holds
the outlet for L time units. Latency is schedlab's: from a message's arrival to the start of its
last packet's service, i.e. sojourn time - 1.

  peers_sim.py --peer ciw|simpy --load 0.9 --packets 200000 [--disc fifo|prio] [--seed 1]

Prints one JSON object: arrival packets simulated, and per length the message count, the mean
latency and a 95% batch-means half-width (20 batches by arrival time, Student t with 19 d.f.).
`--disc prio`: preemptive-resume priority classes by message length (shorter first): Ciw's
priority classes with "resume" preemption; in SimPy a PreemptiveResource, the interrupted message
asking again for what is left of its service.
"""
import argparse
import json
import math
import random
import sys

LENGTHS = [1, 2, 3, 4, 5, 20]
PROBS = [0.18, 0.18, 0.18, 0.18, 0.18, 0.10]
MEAN_LEN = sum(l * p for l, p in zip(LENGTHS, PROBS))  # 4.7 packets
BATCHES = 20
T19 = 2.093024054408263  # Student t, 0.975 quantile, 19 degrees of freedom


def summarise(samples, horizon, packets):
    """samples: (arrival, length, latency). Batch b holds arrivals in [b, b+1) * horizon / BATCHES."""
    out = {"packets": packets, "lengths": {}}
    for length in LENGTHS:
        sums = [0.0] * BATCHES
        counts = [0] * BATCHES
        for arrival, l, lat in samples:
            if l == length:
                b = min(int(arrival * BATCHES / horizon), BATCHES - 1)
                sums[b] += lat
                counts[b] += 1
        n = sum(counts)
        means = [s / c for s, c in zip(sums, counts) if c > 0]
        mean = sum(sums) / n if n else float("nan")
        if len(means) >= 2:
            bm = sum(means) / len(means)
            var = sum((m - bm) ** 2 for m in means) / (len(means) - 1)
            hw = T19 * math.sqrt(var / len(means))
        else:
            hw = float("inf")
        out["lengths"][str(length)] = {"n": n, "mean": mean, "hw": hw}
    return out


def run_ciw(load, packets, disc, seed):
    import ciw

    horizon = packets / load  # arrival packets per time unit = load
    msg_rate = load / MEAN_LEN
    classes = [f"L{l}" for l in LENGTHS]
    kwargs = dict(
        arrival_distributions={c: [ciw.dists.Exponential(rate=msg_rate * p)] for c, p in zip(classes, PROBS)},
        service_distributions={c: [ciw.dists.Deterministic(value=float(l))] for c, l in zip(classes, LENGTHS)},
        number_of_servers=[1],
    )
    if disc == "prio":
        kwargs["priority_classes"] = ({c: i for i, c in enumerate(classes)}, ["resume"])
    network = ciw.create_network(**kwargs)
    ciw.seed(seed)
    sim = ciw.Simulation(network)
    sim.simulate_until_max_time(horizon)
    lengths = dict(zip(classes, LENGTHS))
    samples = []
    arrived = 0
    for r in sim.get_all_records():
        if r.record_type == "service":
            l = lengths[r.customer_class]
            samples.append((r.arrival_date, l, r.exit_date - r.arrival_date - 1.0))
            arrived += l
    for ind in sim.nodes[1].all_individuals:  # arrived, not yet served
        arrived += lengths[ind.customer_class]
    return summarise(samples, horizon, arrived)


def run_simpy(load, packets, disc, seed):
    import simpy

    rng = random.Random(seed)
    env = simpy.Environment()
    msg_rate = load / MEAN_LEN
    samples = []

    if disc == "fifo":
        outlet = simpy.Resource(env, capacity=1)

        def message(length):
            arrival = env.now
            with outlet.request() as req:
                yield req
                yield env.timeout(length)
            samples.append((arrival, length, env.now - arrival - 1.0))
    else:
        outlet = simpy.PreemptiveResource(env, capacity=1)

        def message(length):
            # Preemptive resume by length class. The priority (length, arrival) keeps FIFO within a
            # class when an interrupted message asks again (SimPy would otherwise queue it by the
            # time of its new request), and a message preempts only a strictly longer class.
            arrival = env.now
            left = float(length)
            while left > 0:
                with outlet.request(priority=(length, arrival), preempt=True) as req:
                    yield req
                    start = env.now
                    try:
                        yield env.timeout(left)
                        left = 0.0
                    except simpy.Interrupt:
                        left -= env.now - start
            samples.append((arrival, length, env.now - arrival - 1.0))

    arrived = [0, 0.0]

    def source():
        while arrived[0] < packets:
            yield env.timeout(rng.expovariate(msg_rate))
            length = rng.choices(LENGTHS, PROBS)[0]
            arrived[0] += length
            arrived[1] = env.now
            env.process(message(length))

    env.process(source())
    env.run()  # until every message is delivered
    return summarise(samples, arrived[1], arrived[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", choices=["ciw", "simpy"], required=True)
    ap.add_argument("--load", type=float, required=True, help="offered load in (0, 1)")
    ap.add_argument("--packets", type=int, required=True, help="arrival packets to simulate")
    ap.add_argument("--disc", choices=["fifo", "prio"], default="fifo")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not 0 < a.load < 1:
        ap.error(f"--load {a.load}: must be in (0, 1)")
    if a.peer == "ciw":
        out = run_ciw(a.load, a.packets, a.disc, a.seed)
    else:
        out = run_simpy(a.load, a.packets, a.disc, a.seed)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
