"""V2P's recipes: generate (synthetic data), eval (ScreenSpot protocol), click, train."""
