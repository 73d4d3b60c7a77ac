"""warm"""
