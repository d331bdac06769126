//! The p = 4 golden orders of zero-bubble.md Appendix A, produced by the authors' generators
//! (`vpp.py`, `efficiency.py`, `zb.py`, `zbv_greedy`, `v_schedule` and the handcrafted V
//! patterns) and their ASAP simulator, one constant per family and microbatch count (per cost
//! setting where the orders change with the costs), in `Schedule::notation`. The reference data
//! stands in one place; each family's tests pair it with the numbers they check, and the V
//! families' golden runs (orders and costs in every setting) are checked here.

use super::v_common::testing::assert_golden;

/// Per-device orders of one run on 4 devices.
pub(crate) type Orders = [&'static str; 4];

/// Interleaved 1F1B, 2 chunks (`vpp.py`), 8 microbatches.
pub(crate) const INTERLEAVED_M8: Orders = [
    "F0 F1 F2 F3 f0 f1 f2 f3 F4 F5 F6 x0 F7 x1 f4 x2 f5 x3 f6 X0 f7 X1 X2 X3 x4 x5 x6 x7 X4 X5 X6 X7",
    "F0 F1 F2 F3 f0 f1 f2 f3 F4 x0 F5 x1 F6 x2 F7 x3 f4 X0 f5 X1 f6 X2 f7 X3 x4 x5 x6 x7 X4 X5 X6 X7",
    "F0 F1 F2 F3 f0 f1 f2 x0 f3 x1 F4 x2 F5 x3 F6 X0 F7 X1 f4 X2 f5 X3 f6 x4 f7 x5 x6 x7 X4 X5 X6 X7",
    "F0 F1 F2 F3 f0 x0 f1 x1 f2 x2 f3 x3 F4 X0 F5 X1 F6 X2 F7 X3 f4 x4 f5 x5 f6 x6 f7 x7 X4 X5 X6 X7",
];

/// Interleaved 1F1B, 2 chunks (`vpp.py`), 12 microbatches.
pub(crate) const INTERLEAVED_M12: Orders = [
    "F0 F1 F2 F3 f0 f1 f2 f3 F4 F5 F6 x0 F7 x1 f4 x2 f5 x3 f6 X0 f7 X1 F8 X2 F9 X3 F10 x4 F11 x5 f8 x6 f9 x7 f10 X4 f11 X5 X6 X7 x8 x9 x10 x11 X8 X9 X10 X11",
    "F0 F1 F2 F3 f0 f1 f2 f3 F4 x0 F5 x1 F6 x2 F7 x3 f4 X0 f5 X1 f6 X2 f7 X3 F8 x4 F9 x5 F10 x6 F11 x7 f8 X4 f9 X5 f10 X6 f11 X7 x8 x9 x10 x11 X8 X9 X10 X11",
    "F0 F1 F2 F3 f0 f1 f2 x0 f3 x1 F4 x2 F5 x3 F6 X0 F7 X1 f4 X2 f5 X3 f6 x4 f7 x5 F8 x6 F9 x7 F10 X4 F11 X5 f8 X6 f9 X7 f10 x8 f11 x9 x10 x11 X8 X9 X10 X11",
    "F0 F1 F2 F3 f0 x0 f1 x1 f2 x2 f3 x3 F4 X0 F5 X1 F6 X2 F7 X3 f4 x4 f5 x5 f6 x6 f7 x7 F8 X4 F9 X5 F10 X6 F11 X7 f8 x8 f9 x9 f10 x10 f11 x11 X8 X9 X10 X11",
];

/// ZB-H1 (`efficiency.py`), 8 microbatches: the same under every cost setting.
pub(crate) const ZB_H1_M8: Orders = [
    "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
    "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
    "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7",
];

/// ZB-H1 (`efficiency.py`), 12 microbatches: the same under every cost setting.
pub(crate) const ZB_H1_M12: Orders = [
    "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 F8 B5 W5 F9 B6 W6 F10 B7 W7 F11 B8 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 F8 B6 W5 F9 B7 W6 F10 B8 W7 F11 B9 W8 B10 W9 B11 W10 W11",
    "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 F8 B7 W5 F9 B8 W6 F10 B9 W7 F11 B10 W8 B11 W9 W10 W11",
    "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 F8 B8 W5 F9 B9 W6 F10 B10 W7 F11 B11 W8 W9 W10 W11",
];

/// ZB-H2 (`efficiency.py`), 8 microbatches: the same under every cost setting.
pub(crate) const ZB_H2_M8: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 F7 B3 W1 B4 W2 B5 W3 B6 W4 B7 W5 W6 W7",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 F7 B5 W1 B6 W2 B7 W3 W4 W5 W6 W7",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 W2 W3 W4 W5 W6 W7",
];

/// ZB-H2 (`efficiency.py`), 12 microbatches: the same under every cost setting.
pub(crate) const ZB_H2_M12: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 F8 B2 W2 F9 B3 W3 F10 B4 W4 F11 B5 W5 B6 W6 B7 W7 B8 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 F7 B3 W1 F8 B4 W2 F9 B5 W3 F10 B6 W4 F11 B7 W5 B8 W6 B9 W7 B10 W8 B11 W9 W10 W11",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 F7 B5 W1 F8 B6 W2 F9 B7 W3 F10 B8 W4 F11 B9 W5 B10 W6 B11 W7 W8 W9 W10 W11",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 F8 B8 W2 F9 B9 W3 F10 B10 W4 F11 B11 W5 W6 W7 W8 W9 W10 W11",
];

/// ZB-2p (`zb.py`), unit costs, 8 microbatches (its orders change with the costs).
pub(crate) const ZB_2P_UNIT_M8: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 B0 F7 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 W0 B4 W1 B5 W2 B6 W3 B7 W4 W5 W6 W7",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 W0 B6 W1 B7 W2 W3 W4 W5 W6 W7",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 W0 W1 W2 W3 W4 W5 W6 W7",
];

/// ZB-2p (`zb.py`), unit costs, 12 microbatches.
pub(crate) const ZB_2P_UNIT_M12: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 B0 F7 B1 F8 B2 W0 F9 B3 B4 F10 B5 W1 F11 W2 W3 W4 W5 B6 W6 B7 W7 B8 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 F8 B4 F9 B5 F10 B6 W0 F11 B7 B8 W1 B9 W2 B10 W3 B11 W4 W5 W6 W7 W8 W9 W10 W11",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 F8 B6 F9 B7 F10 B8 F11 B9 W0 B10 W1 B11 W2 W3 W4 W5 W6 W7 W8 W9 W10 W11",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 F8 B8 F9 B9 F10 B10 F11 B11 W0 W1 W2 W3 W4 W5 W6 W7 W8 W9 W10 W11",
];

/// ZB-2p (`zb.py`), costs 5,6,4, 8 microbatches.
pub(crate) const ZB_2P_UNEVEN_M8: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 B0 F7 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 W0 B4 W1 W2 B5 B6 W3 B7 W4 W5 W6 W7",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 W0 B6 W1 B7 W2 W3 W4 W5 W6 W7",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 W0 W1 W2 W3 W4 W5 W6 W7",
];

/// ZB-2p (`zb.py`), costs 5,6,4 and communication 1, 12 microbatches.
pub(crate) const ZB_2P_UNEVEN_COMM_M12: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 F7 B0 W0 F8 B1 W1 F9 B2 B3 F10 B4 W2 F11 W3 W4 B5 W5 B6 W6 B7 W7 B8 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 F3 F4 F5 B0 F6 B1 F7 B2 F8 B3 F9 B4 W0 W1 F10 B5 B6 W2 B7 F11 B8 W3 W4 B9 W5 B10 W6 B11 W7 W8 W9 W10 W11",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 F8 B6 F9 B7 F10 B8 W0 F11 B9 W1 B10 W2 B11 W3 W4 W5 W6 W7 W8 W9 W10 W11",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 F8 B8 F9 B9 F10 B10 F11 B11 W0 W1 W2 W3 W4 W5 W6 W7 W8 W9 W10 W11",
];

/// V-Half (`zbv_greedy`), 8 microbatches: the same under every cost setting.
pub(crate) const V_HALF_M8: Orders = [
    "F0 F1 F2 F3 F4 f0 b0 w0 f1 b1 w1 f2 B0 b2 w2 f3 W0 F5 B1 b3 w3 f4 W1 F6 B2 b4 w4 f5 W2 F7 B3 b5 w5 f6 b6 w6 B4 W3 W4 f7 b7 B5 w7 B6 W5 W6 B7 W7",
    "F0 F1 F2 F3 f0 f1 b0 w0 f2 b1 w1 B0 W0 F4 f3 b2 w2 B1 W1 F5 f4 b3 w3 B2 W2 F6 f5 b4 w4 B3 F7 W3 f6 b5 w5 B4 b6 w6 f7 W4 B5 b7 B6 w7 W5 W6 B7 W7",
    "F0 F1 F2 f0 f1 f2 b0 w0 F3 b1 B0 w1 W0 f3 F4 B1 b2 w2 f4 W1 F5 B2 b3 w3 f5 W2 F6 B3 b4 w4 f6 W3 F7 B4 b5 w5 f7 b6 B5 w6 B6 b7 w7 W4 B7 W5 W6 W7",
    "F0 f0 F1 f1 F2 f2 b0 w0 B0 W0 F3 f3 b1 w1 B1 W1 F4 f4 b2 w2 B2 W2 F5 f5 b3 w3 B3 F6 W3 f6 b4 B4 w4 F7 W4 f7 b5 B5 b6 B6 w5 w6 b7 B7 w7 W5 W6 W7",
];

/// V-Min (`zbv_greedy`), 8 microbatches: the same under every cost setting.
pub(crate) const V_MIN_M8: Orders = [
    "F0 F1 F2 f0 b0 w0 f1 b1 w1 B0 W0 F3 f2 b2 B1 w2 W1 F4 f3 b3 B2 w3 W2 F5 f4 b4 B3 w4 W3 F6 f5 b5 B4 w5 W4 F7 f6 b6 B5 w6 W5 f7 b7 B6 w7 W6 B7 W7",
    "F0 F1 f0 f1 b0 w0 F2 B0 b1 w1 W0 f2 F3 B1 b2 w2 W1 f3 F4 B2 b3 w3 W2 f4 F5 B3 b4 w4 W3 f5 F6 B4 b5 w5 W4 f6 F7 B5 b6 w6 W5 f7 B6 b7 w7 W6 B7 W7",
    "F0 F1 f0 f1 b0 w0 F2 B0 W0 b1 f2 w1 B1 F3 W1 b2 f3 w2 B2 F4 W2 b3 f4 w3 B3 F5 W3 b4 f5 w4 B4 F6 W4 b5 f6 w5 B5 F7 W5 b6 f7 w6 B6 W6 b7 w7 B7 W7",
    "F0 f0 F1 f1 b0 B0 w0 W0 F2 f2 b1 B1 w1 W1 F3 f3 b2 B2 w2 W2 F4 f4 b3 B3 w3 W3 F5 f5 b4 B4 w4 W4 F6 f6 b5 B5 w5 W5 F7 f7 b6 B6 w6 W6 b7 B7 w7 W7",
];

/// V-Half (`zbv_greedy`), 12 microbatches: the same under every cost setting.
pub(crate) const V_HALF_M12: Orders = [
    "F0 F1 F2 F3 F4 f0 b0 w0 f1 b1 w1 f2 B0 b2 w2 f3 W0 F5 B1 b3 w3 f4 W1 F6 B2 b4 w4 f5 W2 F7 B3 b5 w5 f6 W3 F8 B4 b6 w6 f7 W4 F9 B5 b7 w7 f8 W5 F10 B6 b8 w8 f9 W6 F11 B7 b9 w9 f10 b10 w10 B8 W7 W8 f11 b11 B9 w11 B10 W9 W10 B11 W11",
    "F0 F1 F2 F3 f0 f1 b0 w0 f2 b1 w1 B0 W0 F4 f3 b2 w2 B1 W1 F5 f4 b3 w3 B2 W2 F6 f5 b4 w4 B3 W3 F7 f6 b5 w5 B4 W4 F8 f7 b6 w6 B5 W5 F9 f8 b7 w7 B6 W6 F10 f9 b8 w8 B7 F11 W7 f10 b9 w9 B8 b10 w10 f11 W8 B9 b11 B10 w11 W9 W10 B11 W11",
    "F0 F1 F2 f0 f1 f2 b0 w0 F3 b1 B0 w1 W0 f3 F4 B1 b2 w2 f4 W1 F5 B2 b3 w3 f5 W2 F6 B3 b4 w4 f6 W3 F7 B4 b5 w5 f7 W4 F8 B5 b6 w6 f8 W5 F9 B6 b7 w7 f9 W6 F10 B7 b8 w8 f10 W7 F11 B8 b9 w9 f11 b10 B9 w10 B10 b11 w11 W8 B11 W9 W10 W11",
    "F0 f0 F1 f1 F2 f2 b0 w0 B0 W0 F3 f3 b1 w1 B1 W1 F4 f4 b2 w2 B2 W2 F5 f5 b3 w3 B3 W3 F6 f6 b4 w4 B4 W4 F7 f7 b5 w5 B5 W5 F8 f8 b6 w6 B6 W6 F9 f9 b7 w7 B7 F10 W7 f10 b8 B8 w8 F11 W8 f11 b9 B9 b10 B10 w9 w10 b11 B11 w11 W9 W10 W11",
];

/// V-Min (`zbv_greedy`), 12 microbatches: the same under every cost setting.
pub(crate) const V_MIN_M12: Orders = [
    "F0 F1 F2 f0 b0 w0 f1 b1 w1 B0 W0 F3 f2 b2 B1 w2 W1 F4 f3 b3 B2 w3 W2 F5 f4 b4 B3 w4 W3 F6 f5 b5 B4 w5 W4 F7 f6 b6 B5 w6 W5 F8 f7 b7 B6 w7 W6 F9 f8 b8 B7 w8 W7 F10 f9 b9 B8 w9 W8 F11 f10 b10 B9 w10 W9 f11 b11 B10 w11 W10 B11 W11",
    "F0 F1 f0 f1 b0 w0 F2 B0 b1 w1 W0 f2 F3 B1 b2 w2 W1 f3 F4 B2 b3 w3 W2 f4 F5 B3 b4 w4 W3 f5 F6 B4 b5 w5 W4 f6 F7 B5 b6 w6 W5 f7 F8 B6 b7 w7 W6 f8 F9 B7 b8 w8 W7 f9 F10 B8 b9 w9 W8 f10 F11 B9 b10 w10 W9 f11 B10 b11 w11 W10 B11 W11",
    "F0 F1 f0 f1 b0 w0 F2 B0 W0 b1 f2 w1 B1 F3 W1 b2 f3 w2 B2 F4 W2 b3 f4 w3 B3 F5 W3 b4 f5 w4 B4 F6 W4 b5 f6 w5 B5 F7 W5 b6 f7 w6 B6 F8 W6 b7 f8 w7 B7 F9 W7 b8 f9 w8 B8 F10 W8 b9 f10 w9 B9 F11 W9 b10 f11 w10 B10 W10 b11 w11 B11 W11",
    "F0 f0 F1 f1 b0 B0 w0 W0 F2 f2 b1 B1 w1 W1 F3 f3 b2 B2 w2 W2 F4 f4 b3 B3 w3 W3 F5 f5 b4 B4 w4 W4 F6 f6 b5 B5 w5 W5 F7 f7 b6 B6 w6 W6 F8 f8 b7 B7 w7 W7 F9 f9 b8 B8 w8 W8 F10 f10 b9 B9 w9 W9 F11 f11 b10 B10 w10 W10 b11 B11 w11 W11",
];

/// 1F1B-V, 8 microbatches: the same under every cost setting.
pub(crate) const ONE_F_ONE_B_V_M8: Orders = [
    "F0 F1 F2 F3 F4 f0 x0 f1 x1 f2 x2 f3 x3 X0 F5 f4 x4 X1 F6 f5 x5 X2 F7 f6 x6 X3 f7 x7 X4 X5 X6 X7",
    "F0 F1 F2 F3 f0 f1 x0 f2 x1 F4 x2 f3 X0 x3 f4 F5 X1 x4 f5 F6 X2 x5 f6 F7 X3 x6 f7 X4 x7 X5 X6 X7",
    "F0 F1 F2 f0 f1 f2 x0 F3 x1 F4 X0 f3 x2 X1 f4 x3 F5 X2 f5 x4 F6 X3 f6 x5 F7 X4 f7 x6 X5 x7 X6 X7",
    "F0 f0 F1 f1 F2 f2 x0 X0 F3 f3 x1 X1 F4 f4 x2 X2 F5 f5 x3 X3 F6 f6 x4 X4 F7 f7 x5 X5 x6 X6 x7 X7",
];

/// 1F1B-V, 12 microbatches: the same under every cost setting.
pub(crate) const ONE_F_ONE_B_V_M12: Orders = [
    "F0 F1 F2 F3 F4 f0 x0 f1 x1 f2 x2 f3 x3 X0 F5 f4 x4 X1 F6 f5 x5 X2 F7 f6 x6 X3 F8 f7 x7 X4 F9 f8 x8 X5 F10 f9 x9 X6 F11 f10 x10 X7 f11 x11 X8 X9 X10 X11",
    "F0 F1 F2 F3 f0 f1 x0 f2 x1 F4 x2 f3 X0 x3 f4 F5 X1 x4 f5 F6 X2 x5 f6 F7 X3 x6 f7 F8 X4 x7 f8 F9 X5 x8 f9 F10 X6 x9 f10 F11 X7 x10 f11 X8 x11 X9 X10 X11",
    "F0 F1 F2 f0 f1 f2 x0 F3 x1 F4 X0 f3 x2 X1 f4 x3 F5 X2 f5 x4 F6 X3 f6 x5 F7 X4 f7 x6 F8 X5 f8 x7 F9 X6 f9 x8 F10 X7 f10 x9 F11 X8 f11 x10 X9 x11 X10 X11",
    "F0 f0 F1 f1 F2 f2 x0 X0 F3 f3 x1 X1 F4 f4 x2 X2 F5 f5 x3 X3 F6 f6 x4 X4 F7 f7 x5 X5 F8 f8 x6 X6 F9 f9 x7 X7 F10 f10 x8 X8 F11 f11 x9 X9 x10 X10 x11 X11",
];

/// ZB-V handcrafted, 8 microbatches: the same under every cost setting.
pub(crate) const ZB_V_HANDCRAFTED_M8: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 B1 W1 f5 b5 w5 B2 W2 f6 b6 w6 B3 W3 f7 b7 w7 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 B2 W2 f6 b5 w5 B3 W3 f7 b6 w6 B4 b7 B5 W4 B6 W5 B7 W6 w7 W7",
    "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 B3 W3 f7 b5 w5 B4 b6 B5 b7 B6 W4 B7 W5 w6 w7 W6 W7",
    "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 B4 b5 B5 b6 B6 b7 B7 W4 w5 w6 w7 W5 W6 W7",
];

/// ZB-V handcrafted, 12 microbatches: the same under every cost setting.
pub(crate) const ZB_V_HANDCRAFTED_M12: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 F8 B1 W1 f5 b5 w5 F9 B2 W2 f6 b6 w6 F10 B3 W3 f7 b7 w7 F11 B4 W4 f8 b8 w8 B5 W5 f9 b9 w9 B6 W6 f10 b10 w10 B7 W7 f11 b11 w11 B8 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 F8 B2 W2 f6 b5 w5 F9 B3 W3 f7 b6 w6 F10 B4 W4 f8 b7 w7 F11 B5 W5 f9 b8 w8 B6 W6 f10 b9 w9 B7 W7 f11 b10 w10 B8 b11 B9 W8 B10 W9 B11 W10 w11 W11",
    "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 F8 B3 W3 f7 b5 w5 F9 B4 W4 f8 b6 w6 F10 B5 W5 f9 b7 w7 F11 B6 W6 f10 b8 w8 B7 W7 f11 b9 w9 B8 b10 B9 b11 B10 W8 B11 W9 w10 w11 W10 W11",
    "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 F8 B4 W4 f8 b5 w5 F9 B5 W5 f9 b6 w6 F10 B6 W6 f10 b7 w7 F11 B7 W7 f11 b8 w8 B8 b9 B9 b10 B10 b11 B11 W8 w9 w10 w11 W9 W10 W11",
];

/// ZB-V (`v_schedule`), unit costs, 8 microbatches (its orders change with the costs).
pub(crate) const ZB_V_UNIT_M8: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 B1 W1 f5 b5 w5 B2 W2 f6 b6 w6 B3 W3 f7 b7 B4 w7 B5 W4 B6 W5 B7 W6 W7",
    "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 B2 W2 f6 b5 w5 B3 W3 f7 b6 B4 b7 B5 w6 B6 W4 B7 w7 W5 W6 W7",
    "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 B3 W3 f7 b5 B4 b6 B5 b7 B6 w5 B7 W4 w6 W5 w7 W6 W7",
    "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 B4 b5 B5 b6 B6 b7 B7 w4 W4 w5 W5 w6 W6 w7 W7",
];

/// ZB-V (`v_schedule`), unit costs, 12 microbatches.
pub(crate) const ZB_V_UNIT_M12: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 F8 B1 W1 f5 b5 w5 F9 B2 W2 f6 b6 w6 F10 B3 W3 f7 b7 w7 F11 B4 W4 f8 b8 w8 B5 W5 f9 b9 w9 B6 W6 f10 b10 w10 B7 W7 f11 b11 B8 w11 B9 W8 B10 W9 B11 W10 W11",
    "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 F8 B2 W2 f6 b5 w5 F9 B3 W3 f7 b6 w6 F10 B4 W4 f8 b7 w7 F11 B5 W5 f9 b8 w8 B6 W6 f10 b9 w9 B7 W7 f11 b10 B8 b11 B9 w10 B10 W8 B11 w11 W9 W10 W11",
    "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 F8 B3 W3 f7 b5 w5 F9 B4 W4 f8 b6 w6 F10 B5 W5 f9 b7 w7 F11 B6 W6 f10 b8 w8 B7 W7 f11 b9 B8 b10 B9 b11 B10 w9 B11 W8 w10 W9 w11 W10 W11",
    "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 F8 B4 W4 f8 b5 w5 F9 B5 W5 f9 b6 w6 F10 B6 W6 f10 b7 w7 F11 B7 W7 f11 b8 B8 b9 B9 b10 B10 b11 B11 w8 W8 w9 W9 w10 W10 w11 W11",
];

/// ZB-V (`v_schedule`), costs 5,6,4, 8 microbatches.
pub(crate) const ZB_V_UNEVEN_M8: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 B1 W1 f5 b5 w5 B2 W2 f6 b6 w6 B3 W3 f7 b7 B4 w7 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 B2 W2 f6 b5 w5 B3 W3 f7 b6 B4 b7 B5 w6 W4 B6 w7 B7 W5 W6 W7",
    "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 B3 W3 f7 b5 B4 b6 B5 b7 B6 w5 B7 W4 w6 W5 w7 W6 W7",
    "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 B4 b5 B5 b6 B6 b7 B7 w4 W4 w5 W5 w6 W6 w7 W7",
];

/// ZB-V (`v_schedule`), costs 5,6,4 and communication 1, 12 microbatches.
pub(crate) const ZB_V_UNEVEN_COMM_M12: Orders = [
    "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 F8 B1 W1 f5 b5 w5 F9 B2 W2 f6 b6 w6 F10 B3 W3 f7 b7 w7 F11 B4 W4 f8 b8 w8 B5 f9 b9 W5 w9 B6 f10 b10 W6 w10 B7 f11 b11 W7 B8 w11 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 F8 B2 W2 f6 b5 w5 F9 B3 W3 f7 b6 w6 F10 B4 W4 f8 b7 w7 F11 B5 W5 f9 b8 w8 B6 f10 b9 W6 w9 B7 f11 b10 B8 b11 W7 B9 w10 B10 W8 w11 B11 W9 W10 W11",
    "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 F8 B3 W3 f7 b5 w5 F9 B4 W4 f8 b6 w6 F10 B5 W5 f9 b7 w7 F11 B6 W6 f10 b8 w8 B7 f11 b9 B8 b10 B9 b11 B10 W7 w9 B11 W8 w10 W9 w11 W10 W11",
    "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 F8 B4 W4 f8 b5 w5 F9 B5 W5 f9 b6 w6 F10 B6 W6 f10 b7 w7 F11 B7 W7 f11 b8 B8 b9 B9 b10 B10 b11 B11 w8 W8 w9 W9 w10 W10 w11 W11",
];

/// The V families' golden runs (p=4): orders and cost (max span) in each Appendix A setting.
/// 1F1B-V and the handcrafted ZB-V work in slots, so their orders are the same in every
/// setting and only the costs differ; ZB-V's heuristic changes its orders with the costs.
#[test]
fn v_families_reproduce_the_golden_orders_and_costs() {
    let by_microbatches = |m8: Orders, m12: Orders| [m8, m12, m8, m12];
    assert_golden("1f1b-v", by_microbatches(ONE_F_ONE_B_V_M8, ONE_F_ONE_B_V_M12), [63.0, 87.0, 315.0, 483.0]);
    assert_golden(
        "zb-v-handcrafted",
        by_microbatches(ZB_V_HANDCRAFTED_M8, ZB_V_HANDCRAFTED_M12),
        [48.0, 72.0, 252.0, 388.0],
    );
    let zb_v = [ZB_V_UNIT_M8, ZB_V_UNIT_M12, ZB_V_UNEVEN_M8, ZB_V_UNEVEN_COMM_M12];
    assert_golden("zb-v", zb_v, [48.0, 72.0, 248.0, 384.0]);
}
