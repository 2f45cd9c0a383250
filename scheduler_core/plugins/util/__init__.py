"""What several plugins share (as Volcano's ``pkg/scheduler/plugins/util``)."""
