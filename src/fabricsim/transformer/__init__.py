"""fabricsim.transformer"""
