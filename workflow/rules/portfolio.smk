# portfolio rules (being written).
