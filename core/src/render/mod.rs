//! Drawing: timelines to scenes, scenes to any plotters backend.
