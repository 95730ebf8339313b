"""Evidence collection: read what the system recorded and assemble the engine's evidence bundle."""
