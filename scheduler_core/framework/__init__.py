"""Sessions, statements, hook dispatch and the plugin/action registries."""
