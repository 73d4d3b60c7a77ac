"""hookkit"""
