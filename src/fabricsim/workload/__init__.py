"""fabricsim.workload"""
