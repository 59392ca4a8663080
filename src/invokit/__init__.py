"""invokit."""
