//! TCP echo latency: servers (naive, iosubmit, splice, sockmap, io_uring), burst client, histograms, charts.
pub mod cli;
