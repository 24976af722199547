"""Where the load goes: the official emulators (start / reuse / attach, reset), the real
services behind the explicit cloud opt-in, and the loopback latency proxy."""
