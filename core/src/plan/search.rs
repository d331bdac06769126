//! Plans under a memory limit (filled in below).
