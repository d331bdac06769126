//! Import and export formats (PyTorch CSV, Bubblescope JSON, Perfetto trace).
