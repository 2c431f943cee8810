"""fabricsim.planner"""
