//! Drawing: a timeline becomes a [`Scene`] (all layout and level-of-detail decisions), and a
//! scene is drawn through [`draw()`] onto any plotters backend — canvas in the app, SVG in the
//! CLI and exports. One routine serves both, so they show the same picture.

mod animate;
mod axis;
mod cursor;
mod draw;
mod figure;
mod focus;
mod gantt;
mod memory;
mod pareto;
mod scene;
mod theme;

pub use animate::{figure_animated_svg, AnimateOptions, DURATION_RANGE};
pub use axis::{format_tick, ticks, TimeAxis};
pub use cursor::{Cursor, CursorState, DeviceAt};
pub use draw::{draw, to_svg, DrawError, SVG_FONT_FACTOR};
pub use figure::{
    figure, figure_layout, figure_svg, summary_line, Figure, FigureGeometry, FigureItem, FigureOptions, MEMORY_HEIGHT,
};
pub use focus::{Band, Focus};
pub use gantt::{
    device_label, gantt, gutter_for, gutter_width, GanttGeometry, GanttOptions, GanttPanel, GapRect, PanelGeometry,
    NARROW_CHART,
};
pub use memory::{memory_chart, memory_plot_band, MemoryOptions};
pub use pareto::{pareto_chart, pareto_svg, AxisUnit, ParetoGeometry, ParetoMarker, ParetoOptions};
pub use scene::{text_width, Anchor, Item, LodCounts, Scene};
pub use theme::{BarKind, Cause, Rgb, Theme};

impl Scene {
    /// Appends `other` below this scene (widths are expected to match), for figures that
    /// stack a Gantt chart and a memory chart.
    pub fn stack(mut self, other: Scene) -> Scene {
        let dy = f64::from(self.height);
        for mut item in other.items {
            match &mut item {
                Item::Rect { y0, y1, .. } => {
                    *y0 += dy;
                    *y1 += dy;
                }
                Item::Text { y, .. } | Item::Dot { y, .. } => *y += dy,
                Item::Line { points, .. } | Item::Polygon { points, .. } => points.iter_mut().for_each(|p| p.1 += dy),
            }
            self.items.push(item);
        }
        self.width = self.width.max(other.width);
        self.height += other.height;
        self.counts.drawn += other.counts.drawn;
        self.counts.merged += other.counts.merged;
        self.counts.culled += other.counts.culled;
        self.counts.labelled += other.counts.labelled;
        self
    }
}

#[cfg(test)]
mod tests;
