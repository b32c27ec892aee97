// Peer program for crates/sim/bench/peers.py: the report's single outlet in ns-3 (3.37).
//
// A point-to-point link (rate 8 Mb/s, delay 0) between two nodes; the sender's device queue
// (DropTail, large enough never to drop) is the outlet's FIFO and the link transmits one
// 1000-byte frame (998 bytes payload + the 2-byte PPP header) in exactly 1 ms = one time unit:
// deterministic service, which `schedlab sim --service det` matches. Messages arrive as a Poisson
// stream (mean length 4.7 packets; 1-5 packets uniform with 90%, 20 packets with 10%), each one's
// packets handed to the device back to back. A message's latency is schedlab's: from its arrival
// to the start of its last packet's transmission = (last packet received) - arrival - 1 time unit.
//
//   peers_ns3 LOAD PACKETS [SEED]
//
// Prints one JSON object like peers_sim.py: arrival packets, and per length the message count,
// mean latency and 95% batch-means half-width (20 batches by arrival time, Student t, 19 d.f.).
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

using namespace ns3;

namespace {
const int kLengths[] = {1, 2, 3, 4, 5, 20};
const double kProbs[] = {0.18, 0.18, 0.18, 0.18, 0.18, 0.10};
const int kClasses = 6;
const double kMeanLen = 4.7;
const int kBatches = 20;
const double kT19 = 2.093024054408263;
const uint32_t kPayload = 998;  // + 2-byte PPP header = 1000 bytes = 1 ms at 8 Mb/s

struct Message {
  double arrival;  // time units
  int cls;
  int left;  // packets not yet received
};

struct State {
  Ptr<NetDevice> tx;
  Ptr<ExponentialRandomVariable> gap;
  Ptr<UniformRandomVariable> pick;
  long long target = 0;  // arrival packets to generate
  long long arrived = 0;
  double last_arrival = 0;
  std::deque<Message> inflight;  // FIFO: packets leave in arrival order
  std::vector<std::vector<double>> sums, counts;
  std::vector<std::pair<double, std::pair<int, double>>> samples;  // arrival, class, latency
} S;

double Now() { return Simulator::Now().GetSeconds() * 1000.0; }  // time units (ms)

void Arrive() {
  double u = S.pick->GetValue(), acc = 0;
  int cls = kClasses - 1;
  for (int i = 0; i < kClasses; i++) {
    acc += kProbs[i];
    if (u < acc) { cls = i; break; }
  }
  int len = kLengths[cls];
  S.inflight.push_back(Message{Now(), cls, len});
  for (int i = 0; i < len; i++) {
    if (!S.tx->Send(Create<Packet>(kPayload), S.tx->GetBroadcast(), 0x0800)) {
      std::fprintf(stderr, "peers_ns3: the device queue dropped a packet (queue size too small)\n");
      std::exit(1);
    }
  }
  S.arrived += len;
  S.last_arrival = Now();
  if (S.arrived < S.target) Simulator::Schedule(MilliSeconds(1) * S.gap->GetValue(), &Arrive);
}

bool Receive(Ptr<NetDevice>, Ptr<const Packet>, uint16_t, const Address &) {
  Message &m = S.inflight.front();
  if (--m.left == 0) {
    S.samples.push_back({m.arrival, {m.cls, Now() - m.arrival - 1.0}});
    S.inflight.pop_front();
  }
  return true;
}
}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: peers_ns3 LOAD PACKETS [SEED]\n");
    return 2;
  }
  double load = std::atof(argv[1]);
  long long packets = std::atoll(argv[2]);
  uint32_t seed = argc > 3 ? std::atoi(argv[3]) : 1;
  if (!(load > 0 && load < 1) || packets <= 0) {
    std::fprintf(stderr, "peers_ns3: LOAD must be in (0, 1) and PACKETS positive\n");
    return 2;
  }
  RngSeedManager::SetSeed(seed);
  Config::SetDefault("ns3::DropTailQueue<Packet>::MaxSize", QueueSizeValue(QueueSize("100000000p")));

  NodeContainer nodes;
  nodes.Create(2);
  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", StringValue("8Mbps"));
  p2p.SetChannelAttribute("Delay", StringValue("0s"));
  NetDeviceContainer devs = p2p.Install(nodes);
  S.tx = devs.Get(0);
  devs.Get(1)->SetReceiveCallback(MakeCallback(&Receive));

  S.gap = CreateObject<ExponentialRandomVariable>();
  S.gap->SetAttribute("Mean", DoubleValue(kMeanLen / load));  // time units between messages
  S.pick = CreateObject<UniformRandomVariable>();
  S.target = packets;
  Simulator::Schedule(MilliSeconds(1) * S.gap->GetValue(), &Arrive);
  Simulator::Run();  // until every message is delivered
  Simulator::Destroy();

  double horizon = S.last_arrival;
  std::printf("{\"packets\": %lld, \"lengths\": {", S.arrived);
  for (int c = 0; c < kClasses; c++) {
    std::vector<double> sum(kBatches, 0), cnt(kBatches, 0);
    for (auto &s : S.samples) {
      if (s.second.first != c) continue;
      int b = std::min(kBatches - 1, int(s.first * kBatches / horizon));
      sum[b] += s.second.second;
      cnt[b] += 1;
    }
    double n = 0, total = 0, bm = 0, k = 0;
    std::vector<double> means;
    for (int b = 0; b < kBatches; b++) {
      n += cnt[b];
      total += sum[b];
      if (cnt[b] > 0) means.push_back(sum[b] / cnt[b]);
    }
    for (double m : means) bm += m;
    k = means.size();
    bm /= k;
    double var = 0;
    for (double m : means) var += (m - bm) * (m - bm);
    double hw = k >= 2 ? kT19 * std::sqrt(var / (k - 1) / k) : INFINITY;
    std::printf("%s\"%d\": {\"n\": %.0f, \"mean\": %.17g, \"hw\": %.17g}", c ? ", " : "", kLengths[c], n,
                n ? total / n : NAN, hw);
  }
  std::printf("}}\n");
  return 0;
}
