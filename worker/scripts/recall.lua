-- wrk script: POST recall-instruction with the agent key in LID_AGENT_KEY.
wrk.method = "POST"
wrk.body = '{"intent":"production is broken after the deploy, how do I roll back?"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("LID_AGENT_KEY")
