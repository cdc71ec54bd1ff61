"""V2P's registrations (lazy targets; importing this module imports nothing heavy)."""
