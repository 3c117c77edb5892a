# views rules (being written).
