"""fabricsim.collectives"""
