"""A stand-in for LMCache, written for fdpblock's tests from LMCache's documented L2 adapter contract:
only the types an L2 adapter and its callers use (keys, Bitmap, memory objects over real buffers, the
adapter interface, the plugin loader). It holds no LMCache code."""
