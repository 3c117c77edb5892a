# geometry rules (being written).
