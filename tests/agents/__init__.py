"""Test-only agents that talk without working: they show the recipes reward work, not words."""
