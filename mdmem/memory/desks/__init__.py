"""desks"""
