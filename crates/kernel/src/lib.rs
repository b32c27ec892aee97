//! # schedlab-kernel — a Linux kernel of our own
//!
//! The host kernel of the machines schedlab grew up on has no RDMA and only three qdiscs. A Debian
//! kernel booted under QEMU (software emulation) has all of them and runs the host's own programs
//! unchanged. This crate is that guest and what is measured in it:
//! - [`guest`]: the runner — fetches Debian's 6.12 kernel package through apt into a cache folder
//!   (nothing is installed into /boot), builds a tiny initramfs, boots QEMU with the host's root
//!   read-only over 9p, runs one command and returns its output and exit status, bounded by a
//!   timeout; where it cannot run it says why in one line ([`guest::Unavailable`]);
//! - [`cpio`]: the initramfs archive writer (`newc` format);
//! - [`qdisc`]: the kernel as the third answer — a sched traffic file through a qdisc on a veth in
//!   the guest (pfifo, drr, qfq, prio, fq, fq_codel under a tbf bottleneck), counted per flow at the
//!   receiver, beside the model's and the harness's answers;
//! - [`cli`]: `schedlab vm [--timeout S] [--cache DIR] -- CMD...` and `schedlab qdisc`'s argv into
//!   a config, and their help texts; [`app`]: their flow (boot, print, write files, exit code).
//!
//! The guest has no network device to the outside: every address lives on veth pairs inside it.
pub mod app;
pub mod cli;
pub mod cpio;
pub mod guest;
pub mod qdisc;
