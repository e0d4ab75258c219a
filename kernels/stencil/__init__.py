"""Stencil kernels on a 3D Cartesian process grid (halo exchange)."""
